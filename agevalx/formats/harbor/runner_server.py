"""Imports Harbor's agents once and forks one runner per invocation: run by Harbor's Python.

    python runner_server.py NAME SOCKET

A program, like `agent_runner.py` beside it (which it imports from its own folder; it imports
nothing of ageval). Importing harbor and agent NAME's modules is most of a runner's cost
(LiteLLM's import alone is ~4 s of CPU), and it is the same for every invocation of a job:
the server pays it once. It writes `agent_runner.describe(NAME)` as one JSON line on its
stdout, then listens on the Unix socket SOCKET (in a folder only its user can enter).

Each connection is one runner. ageval sends one JSON line, `{"env": {...}}`, with three file
descriptors: the runner's stdin, stdout and stderr. The server forks; the child starts a
session of its own, takes those descriptors as 0, 1 and 2 and exactly that environment,
says `{"pid": N}` on the connection, and is `agent_runner.py run` from there. When it has
ended the server says `{"exit": CODE}` and closes the connection.

The server is one thread (a fork copies only the forking thread, so no lock another thread
held can be left locked in a child) and ends when its stdin closes, which is when ageval
ends, however it ends, removing SOCKET and its folder; a runner running then goes on until
ageval's end of its pipes closes.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import selectors
import signal
import socket
import sys
import traceback
from pathlib import Path
from types import ModuleType

REQUEST_BYTES = 1 << 20
"""The longest request line (an environment) the server reads."""

RUN_MODULES = (
    "harbor.models.trial.paths",
    "harbor.models.task.config",
    "harbor.models.agent.context",
    "harbor.environments.base",
    "harbor.environments.capabilities",
)
"""What `agent_runner.run` imports beyond the agent's class: imported before any fork too."""


def prepare(name: str) -> tuple[ModuleType, dict[str, object]]:
    """Import `agent_runner` (from this program's folder), harbor, the agent's modules and
    the runner's: the runner module and its `describe` answer."""
    gc.disable()  # nothing the imports make is garbage (see agent_runner.main)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    runner = importlib.import_module("agent_runner")
    answer: dict[str, object] = runner.describe(name)
    for module in RUN_MODULES:
        importlib.import_module(module)
    gc.freeze()  # what was imported stays out of every collection, in the children too
    return runner, answer


class Server:
    def __init__(self, runner: ModuleType, listener: socket.socket) -> None:
        self.runner = runner
        self.listener = listener
        self.wake_read, self.wake_write = os.pipe()
        os.set_blocking(self.wake_write, False)
        self.children: dict[int, socket.socket] = {}

    def run(self) -> None:
        """Serve until stdin closes."""
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.wake_write)
        selector = selectors.DefaultSelector()
        selector.register(0, selectors.EVENT_READ, "lifeline")
        selector.register(self.listener, selectors.EVENT_READ, "listener")
        selector.register(self.wake_read, selectors.EVENT_READ, "child")
        while True:
            for key, _ in selector.select():
                if key.data == "lifeline" and not os.read(0, 4096):
                    return
                if key.data == "listener":
                    connection, _ = self.listener.accept()
                    self.start(connection)
                if key.data == "child":
                    os.read(self.wake_read, 4096)
            self.reap()

    def start(self, connection: socket.socket) -> None:
        """Fork the runner `connection` asks for (a malformed request is dropped)."""
        descriptors: list[int] = []
        try:
            connection.settimeout(30)
            data, descriptors, _, _ = socket.recv_fds(connection, REQUEST_BYTES, 3)
            while not data.endswith(b"\n") and len(data) < REQUEST_BYTES:
                more = connection.recv(REQUEST_BYTES)
                if not more:
                    raise ConnectionError("the request ended early")
                data += more
            environment = json.loads(data)["env"]
            if len(descriptors) != 3 or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in environment.items()
            ):
                raise ValueError("a request is three descriptors and an environment")
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            _drop(connection, descriptors)
            return
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            pid = os.fork()
        except OSError:  # ageval sees the connection end without a runner (`ServerFailed`)
            _drop(connection, descriptors)
            return
        if pid == 0:
            self.child(connection, descriptors, environment)
        for descriptor in descriptors:
            os.close(descriptor)
        self.children[pid] = connection

    def child(self, connection: socket.socket, descriptors: list[int], env: dict[str, str]) -> None:
        """The runner: never returns."""
        code = 1
        try:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            os.setsid()  # ageval kills the runner's whole session (LiteLLM's workers too)
            for target, descriptor in enumerate(descriptors):
                os.dup2(descriptor, target)
                os.close(descriptor)
            self.listener.close()
            os.close(self.wake_read)
            os.close(self.wake_write)
            for other in self.children.values():
                other.close()
            connection.sendall(json.dumps({"pid": os.getpid()}).encode() + b"\n")
            connection.close()
            os.environ.clear()
            os.environ.update(env)
            code = self.runner.main(["run"])
        except BaseException:
            traceback.print_exc()
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
            os._exit(code)

    def reap(self) -> None:
        """Tell each ended runner's connection its exit code."""
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            connection = self.children.pop(pid, None)
            if connection is None:
                continue
            try:
                code = os.waitstatus_to_exitcode(status)
                connection.sendall(json.dumps({"exit": code}).encode() + b"\n")
            except OSError:
                pass  # ageval stopped waiting for it
            finally:
                connection.close()


def _drop(connection: socket.socket, descriptors: list[int]) -> None:
    """End a request that forks no runner: its connection and the descriptors it sent."""
    for descriptor in descriptors:
        os.close(descriptor)
    connection.close()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: runner_server.py NAME SOCKET", file=sys.stderr)
        return 2
    name, path = argv
    runner, answer = prepare(name)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    try:
        print(json.dumps(answer), flush=True)
        Server(runner, listener).run()
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            os.unlink(path)
            os.rmdir(os.path.dirname(path))  # the folder ageval made for it, if now empty
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
