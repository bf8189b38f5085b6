"""Named scoring hosts (`evaluation.environments`) and the channel evaluator.py reaches them by.

The evaluator runs inside the scoring container; `ctx.environment(name)` sends each request
(`exec`, `read_file`, `write_file`) as one JSON line on the runner's stdout, and reads one JSON
answer per line on its stdin (`runner_script.py`). Here, on the host, `ScoringHosts` answers
them: the first request naming a host finds or builds its image and starts it (labelled by the
session, removed when the session closes). A host whose image cannot be had fails the whole
evaluation with `scoring_host_unavailable`, whatever the evaluator made of the error.
"""

from __future__ import annotations

import base64
import binascii
import json
import posixpath
from collections.abc import Callable
from typing import Any

from docker.utils.socket import frames_iter

from agevalx.environments.container import (
    OUTPUT_LIMIT,
    WORKSPACE,
    AttemptContainer,
    ContainerSpec,
    ExecResult,
)
from agevalx.environments.engine import EnvironmentFailure
from agevalx.hashing import canonical_json

READ_LIMIT = 16 << 20
"""The largest file `read_file` returns (bytes)."""
STDOUT, STDERR = 1, 2

Start = Callable[[ContainerSpec], AttemptContainer]
ImageOf = Callable[[str], str]


class ScoringHosts:
    """The task's scoring hosts by name, each started on its first request."""

    def __init__(
        self, names: list[str], image_of: ImageOf, start: Start, base: ContainerSpec
    ) -> None:
        self._names = set(names)
        self._image_of, self._start, self._base = image_of, start, base
        self._started: dict[str, AttemptContainer] = {}
        self.failure: EnvironmentFailure | None = None
        """The first host that could not be had: the evaluation is an ERROR with its code."""

    def _host(self, name: Any) -> AttemptContainer:
        if not isinstance(name, str) or name not in self._names:
            raise EnvironmentFailure("unknown_scoring_host", f"no scoring environment {name!r}")
        if name not in self._started:
            try:
                image = self._image_of(name)
                spec = ContainerSpec(
                    image=image,
                    name_hint=f"{self._base.name_hint}-{name}",
                    network=self._base.network,
                    platform=self._base.platform,
                    labels=self._base.labels,
                )
                self._started[name] = self._start(spec)
            except EnvironmentFailure as exc:
                failure = EnvironmentFailure(
                    "scoring_host_unavailable",
                    exc.message,
                    file=exc.file,
                    field=exc.field or f"evaluation.environments.{name}",
                    hint=exc.hint,
                )
                self.failure = self.failure or failure
                raise failure from None
        return self._started[name]

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """The answer to one request; a failure is `{"error": code, "message": ...}`."""
        try:
            return self._do(request)
        except EnvironmentFailure as exc:
            return {"error": exc.code, "message": exc.message}
        except (KeyError, TypeError, ValueError, binascii.Error) as exc:
            return {"error": "bad_request", "message": f"{type(exc).__name__}: {exc}"}

    def _do(self, request: dict[str, Any]) -> dict[str, Any]:
        operation = request.get("op")
        host = self._host(request.get("host"))
        path = str(request.get("path", ""))
        if operation == "exec":
            timeout = request.get("timeout")
            result = host.exec(
                str(request["command"]),
                timeout=float(timeout) if timeout is not None else None,
                workdir=str(request.get("workdir") or "/"),
            )
            return {"exit_code": result.exit_code, "output": result.output}
        if not posixpath.isabs(path):
            raise ValueError(f"the path {path!r} must be absolute")
        if operation == "read_file":
            data = host.read_file(path, limit=READ_LIMIT)
            if data is None:
                raise EnvironmentFailure("file_not_found", f"{path} is not a regular file")
            return {"data": base64.b64encode(data).decode()}
        if operation == "write_file":
            content = base64.b64decode(str(request["data"]), validate=True)
            mode = int(request.get("mode", 0o644)) & 0o7777
            parent, name = posixpath.split(path)
            host.put_files(parent or "/", {name: (content, mode)})
            return {}
        raise ValueError(f"unknown operation {operation!r}")


def exec_with_channel(
    container: AttemptContainer,
    argv: list[str],
    answer: Callable[[dict[str, Any]], dict[str, Any]],
    *,
    timeout: float,
    user: str,
    environment: dict[str, str],
    workdir: str = WORKSPACE,
) -> ExecResult:
    """Run `argv` as it is (no shell), answering each JSON line it prints on stdout by one
    JSON line on its stdin; its stderr is the output kept. After `timeout` the container is
    killed (`timed_out`): the time is kept on this side, not by a program of the image's."""
    fired, timer = container.kill_timer(timeout)
    exec_id, raw = container.exec_socket(argv, workdir=workdir, environment=environment, user=user)
    raw.settimeout(timeout + 30)
    if timer is not None:
        timer.start()
    pending, output = b"", bytearray()
    try:
        for stream, data in frames_iter(raw, False):
            if stream == STDERR:
                output.extend(data)
                del output[: max(0, len(output) - OUTPUT_LIMIT)]
                continue
            pending += data
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                raw.sendall(canonical_json(_answer(answer, line)) + b"\n")
    except OSError:  # the socket timed out or broke: the exit code tells what happened
        pass
    finally:
        raw.close()
        if timer is not None:
            timer.cancel()
    exit_code = container.exit_code_of(exec_id)
    text = bytes(output).decode("utf-8", errors="replace")
    return ExecResult(exit_code=exit_code, output=text, timed_out=fired.is_set())


def _answer(answer: Callable[[dict[str, Any]], dict[str, Any]], line: bytes) -> dict[str, Any]:
    try:
        request = json.loads(line)
    except ValueError:
        return {"error": "bad_request", "message": "a request is one JSON object per line"}
    if not isinstance(request, dict):
        return {"error": "bad_request", "message": "a request is a JSON object"}
    return answer(request)
