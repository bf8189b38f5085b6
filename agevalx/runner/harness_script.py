"""Runs a task's run.py inside its harness container (see `agevalx.runner.sandbox`).

This file is copied into the container and run by the container's own python3, so it uses the
standard library only and imports nothing of ageval. run.py gets a `ctx` with the same API as
in-process (`params`, `roles`, `workdir`, `task_file`, `prompt`, `invoke`, `exec`,
`write_file`, `read_file`); every call that acts goes to ageval as one JSON line on stdout and
waits for its answer, one JSON line on stdin, matched by id, so threads may call at once.
What run.py prints goes to stderr: stdout is the channel's alone.

    python3 -I harness.py CONTEXT  # CONTEXT: the JSON of task_dir, run_py, params, roles, workdir
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import threading
import traceback
from pathlib import Path, PurePosixPath
from typing import Any


class QuotaExhausted(Exception):
    """A limit of the attempt ran out (wall time, invocations): the run stops."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


class AgevalError(Exception):
    """ageval refused a call (`code`), as it would raise in-process."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message


class Result:
    """An invocation's or a command's result, with the attributes of the in-process one."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self.__dict__.update(fields)

    def __repr__(self) -> str:
        return f"Result({self.__dict__!r})"


class Channel:
    """Requests out on stdout, answers in on stdin, matched by id."""

    def __init__(self) -> None:
        self._out = os.fdopen(os.dup(1), "w", encoding="utf-8")
        self._lock = threading.Lock()
        self._waiting: dict[int, list[Any]] = {}
        self._next = 0
        self._closed = False
        threading.Thread(target=self._read, daemon=True).start()

    def send(self, message: dict[str, Any]) -> None:
        with self._lock:
            self._out.write(json.dumps(message) + "\n")
            self._out.flush()

    def call(self, op: str, **arguments: Any) -> Any:
        done = threading.Event()
        slot: list[Any] = [done]
        with self._lock:
            if self._closed:
                raise QuotaExhausted("wall_time_seconds")
            number, self._next = self._next, self._next + 1
            self._waiting[number] = slot
        self.send({"id": number, "op": op, **arguments})
        done.wait()
        answer: dict[str, Any] = slot[1]
        error = answer.get("error")
        if error is None:
            return answer.get("value")
        kind = error.get("kind")
        if kind == "quota":
            raise QuotaExhausted(str(error.get("key")))
        if kind == "not_found":
            raise FileNotFoundError(str(error.get("message")))
        raise AgevalError(str(error.get("code")), str(error.get("message")))

    def _read(self) -> None:
        for line in sys.stdin:
            try:
                answer = json.loads(line)
                slot = self._waiting.pop(int(answer["id"]))
            except (ValueError, KeyError, TypeError):
                continue
            slot.append(answer)
            slot[0].set()
        with self._lock:  # ageval closed the channel: every waiting call ends
            self._closed = True
            waiting, self._waiting = list(self._waiting.values()), {}
        for slot in waiting:
            slot.append({"error": {"kind": "quota", "key": "wall_time_seconds"}})
            slot[0].set()


class Context:
    """run.py's `ctx`."""

    def __init__(self, channel: Channel, document: dict[str, Any]) -> None:
        self._channel = channel
        self._task = Path(document["task_dir"])
        self.params: dict[str, Any] = document["params"]
        self.roles: list[str] = document["roles"]
        self.workdir: str = document["workdir"]

    def task_file(self, relative: str) -> Path:
        path = PurePosixPath(relative)
        if path.is_absolute() or ".." in path.parts:
            raise AgevalError("invalid_path", f"{relative!r} must stay inside the task")
        return self._task / relative

    def prompt(self, name: str) -> str:
        return self.task_file(f"prompts/{name}").read_text(encoding="utf-8")

    def invoke(self, role: str, prompt: str) -> Result:
        return Result(self._channel.call("invoke", role=role, prompt=prompt))

    def exec(self, command: str, timeout: float | None = None) -> Result:
        return Result(self._channel.call("exec", command=command, timeout=timeout))

    def write_file(self, path: str, content: str) -> None:
        self._channel.call("write_file", path=path, content=content)

    def read_file(self, path: str) -> str:
        return str(self._channel.call("read_file", path=path))


def main() -> None:
    document = json.loads(sys.argv[1])
    channel = Channel()
    sys.stdout = sys.stderr  # run.py's prints must not reach the channel
    try:
        spec = importlib.util.spec_from_file_location("ageval_run", document["run_py"])
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.run(Context(channel, document))
    except BaseException as exc:  # everything run.py raises is reported, then the end
        error = {
            "type": type(exc).__name__,
            "message": str(exc),
            "traceback": "".join(traceback.format_exception(exc))[-1500:],
        }
        channel.send({"op": "done", "error": error})
        return
    channel.send({"op": "done"})


if __name__ == "__main__":
    main()
