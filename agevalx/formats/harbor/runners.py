"""Harbor's agent runners, forked by one warm server per Harbor Python and agent.

Importing harbor and an agent's modules in Harbor's Python costs ~4 s of CPU (LiteLLM's
import), the same for every invocation. `server(python, name)` starts `runner_server.py` once
per process of ageval and keeps it: its first line is `agent_runner.py describe`'s answer, and
`Server.spawn(env)` has it fork a runner (`agent_runner.py run`) on three pipes of this
process, in a session of its own and with exactly `env`. The `Runner` it returns is used as
the `subprocess.Popen` it replaces: its pipes, `pid` (its session's), `poll`, `wait`, `kill`.

A server ends when its stdin closes: when ageval exits (`close_all`, at exit), or when
the process that started it dies, however it dies. A server that has died is started again
on the next request; one that cannot start is the coded `harbor_not_installed` error with its
stderr's last lines, as before.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

SERVER = Path(__file__).with_name("runner_server.py")

START_TIMEOUT = 120.0
"""Seconds a server may take to import harbor and answer."""

_servers: dict[tuple[str, str], Server] = {}
_lock = threading.Lock()


class ServerFailed(Exception):
    """The server could not be started or did not answer (the message: its stderr's tail)."""


class Runner:
    """One forked runner, as much of a `subprocess.Popen` as the executor uses."""

    def __init__(self, connection: socket.socket, pipes: tuple[int, int, int]) -> None:
        self._connection = connection
        self._buffer = b""
        self._reading = threading.Lock()  # the executor's thread and its watchdog's
        self.returncode: int | None = None
        self.stdin: IO[str] = open(pipes[0], "w", encoding="utf-8")  # noqa: SIM115
        self.stdout: IO[str] = open(pipes[1], encoding="utf-8")  # noqa: SIM115
        self.stderr: IO[str] = open(pipes[2], encoding="utf-8")  # noqa: SIM115
        started = self._message(START_TIMEOUT)
        if started is None or not isinstance(started.get("pid"), int):
            self._close()
            for stream in (self.stdin, self.stdout, self.stderr):
                with contextlib.suppress(OSError):
                    stream.close()
            raise ServerFailed("the server forked no runner")
        self.pid: int = started["pid"]

    def poll(self) -> int | None:
        with self._reading:
            if self.returncode is None:
                self._ended(self._message(0.0))
            return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        with self._reading:
            if self.returncode is None:
                self._ended(self._message(timeout))
        if self.returncode is None:
            raise subprocess.TimeoutExpired(str(SERVER), timeout or 0.0)
        return self.returncode

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)

    def _ended(self, message: dict[str, Any] | None) -> None:
        if message is not None:
            code = message.get("exit")
            self.returncode = code if isinstance(code, int) else -1
            self._close()

    def _message(self, timeout: float | None) -> dict[str, Any] | None:
        """The server's next line (None: none within `timeout`); a connection that ends
        without one is an exit of unknown code."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            self._connection.settimeout(left)
            try:
                chunk = self._connection.recv(4096)
            except (TimeoutError, BlockingIOError):
                return None
            except OSError:
                chunk = b""
            if not chunk:
                return {"exit": None}
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        return message if isinstance(message, dict) else {"exit": None}

    def _close(self) -> None:
        self._connection.close()


class Server:
    """A running `runner_server.py` for one Harbor Python and agent name."""

    def __init__(self, python: str, name: str, environment: dict[str, str]) -> None:
        self.owner = os.getpid()  # a fork of this process must not end it (`close`)
        self.folder = Path(tempfile.mkdtemp(prefix="ageval-harbor-"))  # mode 0700
        self.socket = str(self.folder / "s")
        with tempfile.TemporaryFile() as errors:  # no file is left, however anything ends
            try:
                self.process = subprocess.Popen(
                    [python, "-I", str(SERVER), name, self.socket],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=errors,
                    env=environment,
                    start_new_session=True,
                )
            except OSError as exc:
                shutil.rmtree(self.folder, ignore_errors=True)
                raise ServerFailed(str(exc)) from None
            line = _first_line(self.process, START_TIMEOUT)
            try:
                answer = json.loads(line)
            except ValueError:
                answer = None
            if not isinstance(answer, dict):
                self.close()
                errors.seek(0)
                raise ServerFailed(errors.read().decode(errors="replace").strip()[-600:])
        self.answer: dict[str, Any] = answer

    def alive(self) -> bool:
        return self.process.poll() is None

    def spawn(self, environment: dict[str, str]) -> Runner:
        """A runner forked with `environment`, on three new pipes of this process."""
        stdin_read, stdin_write = os.pipe()
        stdout_read, stdout_write = os.pipe()
        stderr_read, stderr_write = os.pipe()
        theirs = (stdin_read, stdout_write, stderr_write)
        ours = (stdin_write, stdout_read, stderr_read)
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.settimeout(START_TIMEOUT)
            connection.connect(self.socket)
            request = json.dumps({"env": environment}).encode() + b"\n"
            socket.send_fds(connection, [request], list(theirs))
        except OSError as exc:
            connection.close()
            for descriptor in (*theirs, *ours):
                os.close(descriptor)
            raise ServerFailed(f"the runner server refused a runner: {exc}") from None
        for descriptor in theirs:
            os.close(descriptor)
        return Runner(connection, ours)

    def close(self) -> None:
        """End the server (its stdin closes) and remove its folder."""
        if os.getpid() != self.owner:
            return
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _first_line(process: subprocess.Popen[bytes], timeout: float) -> bytes:
    """The process's first line on stdout, or b"" (it ended, or `timeout` passed)."""
    assert process.stdout is not None
    descriptor = process.stdout.fileno()
    line = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(descriptor, selectors.EVENT_READ)
        while b"\n" not in line:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                return b""
            chunk = os.read(descriptor, 65536)
            if not chunk:
                return b""
            line += chunk
    return line.partition(b"\n")[0]


def server(python: str, name: str, environment: dict[str, str]) -> Server:
    """This process's server for `python` and agent `name`, started when there is none (or
    the last one died)."""
    key = (python, name)
    with _lock:
        found = _servers.get(key)
        if found is not None and found.alive():
            return found
        if found is not None:
            found.close()
        started = Server(python, name, environment)
        _servers[key] = started
        return started


def start(python: str, name: str, base: dict[str, str], environment: dict[str, str]) -> Runner:
    """A runner of agent `name` with `environment`, forked by this process's server (started
    with `base` when there is none, or again when it died since its last runner)."""
    try:
        return server(python, name, base).spawn(environment)
    except ServerFailed:
        with _lock:
            dead = _servers.pop((python, name), None)
        if dead is not None:
            dead.close()
        return server(python, name, base).spawn(environment)


@atexit.register
def close_all() -> None:
    """End every server of this process."""
    with _lock:
        for found in _servers.values():
            found.close()
        _servers.clear()
