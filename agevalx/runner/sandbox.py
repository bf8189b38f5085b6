"""run.py in a sandbox: a dataset's run.py runs in a harness container of its own, never in
the ageval process.

The harness container is made from ageval's trusted source image (the one the evaluator's
Python comes from), and holds:
- no network at all (`none`);
- no Docker socket, and no host directory but two read-only mounts: the task's directory
  at `/task` and the harness script;
- no capabilities, no privilege gain, a read-only root filesystem with a small /tmp, and a
  process limit.

run.py talks to ageval over the container's stdin and stdout, one JSON object per line, the
style of the scoring hosts' channel: `{"id", "op", ...}` out, `{"id", "value"}` or
`{"id", "error"}` back. Each call is answered by the attempt's own `RunContext`, so every
limit, journal record, checkpoint, resume and replay rule holds as in-process. Calls are
answered concurrently (run.py's threads may invoke roles at once, up to agent_concurrency).

`--trust-run-py` keeps the in-process path (`TaskRuntime.run_body`): faster, and a run.py
from a stranger then runs with the user's rights.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
from pathlib import Path
from typing import Any

from docker.utils.socket import frames_iter

from agevalx.environments.container import ATTEMPT_LABEL, AttemptContainer, ContainerSpec
from agevalx.environments.engine import LABEL, EnvironmentFailure
from agevalx.errors import AgevalError
from agevalx.evaluation.runtime import source_image
from agevalx.hashing import canonical_json
from agevalx.runner.context import QuotaExhausted, RunContext

HARNESS = Path(__file__).with_name("harness_script.py")
HARNESS_MOUNT = "/opt/ageval/harness.py"
TASK_MOUNT = "/task"
MEMORY_MB = 1024
TMP_MB = 256
MAX_LINE = 64 << 20
"""Bytes of one request line at most (a `write_file` carries its content)."""
STDERR_TAIL = 4000
"""Characters of run.py's output (its prints) kept for an error's hint."""
STDOUT, STDERR = 1, 2
LOST_GRACE = 3.0
"""Seconds a harness that ended without a result gets to be seen stopped by the engine."""


def sandboxed_run(task_dir: Path, attempt: str) -> Any:
    """The run body that runs `task_dir`/run.py in a harness container of `attempt`."""

    def body(ctx: RunContext) -> None:
        _Harness(ctx, task_dir, attempt).run()

    return body


def harness_spec(task_dir: Path, attempt: str) -> ContainerSpec:
    image, _ = source_image()
    return ContainerSpec(
        image=image,
        name_hint=f"{attempt}-run-py",
        network="none",
        memory_mb=MEMORY_MB,
        tmpfs_mb=TMP_MB,
        labels=((LABEL, "harness"), (ATTEMPT_LABEL, attempt)),
        mounts=((str(HARNESS), HARNESS_MOUNT), (str(task_dir.resolve()), TASK_MOUNT)),
        host_gateway=False,
        attempt_dirs=False,
        hardened=True,
    )


class _Harness:
    def __init__(self, ctx: RunContext, task_dir: Path, attempt: str) -> None:
        self.ctx = ctx
        self.task_dir = task_dir
        self.attempt = attempt
        self.done: dict[str, Any] | None = None
        self.fatal: list[BaseException] = []
        self.output = bytearray()
        self.send_lock = threading.Lock()
        self.finished = threading.Event()

    def run(self) -> None:
        container = AttemptContainer.start(harness_spec(self.task_dir, self.attempt))
        try:
            document = {
                "task_dir": TASK_MOUNT,
                "run_py": f"{TASK_MOUNT}/run.py",
                "params": self.ctx.params,
                "roles": self.ctx.roles,
                "workdir": self.ctx.workdir,
            }
            argv = ["python3", "-I", HARNESS_MOUNT, json.dumps(document)]
            exec_id, raw = container.exec_socket(argv, workdir="/tmp", user="root")
            watchdog = threading.Thread(target=self._watch, args=(container,), daemon=True)
            watchdog.start()
            try:
                self._serve(raw)
            finally:
                self.finished.set()
                with contextlib.suppress(OSError):
                    raw.close()
            exit_code = container.exit_code_of(exec_id) if self.done is None else 0
            lost = self.done is None and not self.ctx.closed and container.lost(LOST_GRACE)
        finally:
            container.remove()
        self._end(exit_code, lost)

    def _watch(self, container: AttemptContainer) -> None:
        """The run stage's wall time closes the context: the harness is stopped then, even
        when run.py computes without calling ageval."""
        while not self.finished.wait(0.5):
            if self.ctx.closed:
                container.remove()
                return

    def _serve(self, raw: Any) -> None:
        pending = b""
        try:
            for stream, data in frames_iter(raw, False):
                if stream == STDERR:
                    self.output.extend(data)
                    del self.output[: max(0, len(self.output) - STDERR_TAIL)]
                    continue
                pending += data
                if len(pending) > MAX_LINE:
                    raise AgevalError(
                        "run_py_channel_invalid",
                        f"run.py's harness sent a line of more than {MAX_LINE} bytes",
                    )
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    if self._dispatch(raw, line):
                        return
        except OSError:  # the harness was stopped: what it said so far tells the rest
            pass

    def _dispatch(self, raw: Any, line: bytes) -> bool:
        """Answer one request on its own thread; True at run.py's end."""
        try:
            request = json.loads(line)
        except ValueError:
            request = None
        if not isinstance(request, dict):
            self._send(raw, {"id": None, "error": _refusal("a request is one JSON object")})
            return False
        if request.get("op") == "done":
            self.done = request
            return True
        threading.Thread(target=self._answer, args=(raw, request), daemon=True).start()
        return False

    def _answer(self, raw: Any, request: dict[str, Any]) -> None:
        self._send(raw, {"id": request.get("id"), **self._call(request)})

    def _send(self, raw: Any, answer: dict[str, Any]) -> None:
        with self.send_lock, contextlib.suppress(OSError):
            raw.sendall(canonical_json(answer) + b"\n")

    def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        ctx, op = self.ctx, request.get("op")
        try:
            if op == "invoke":
                role, prompt = _text(request, "role"), _text(request, "prompt")
                return {"value": dataclasses.asdict(ctx.invoke(role, prompt))}
            if op == "exec":
                timeout = request.get("timeout")
                if timeout is not None and not isinstance(timeout, int | float):
                    raise _BadRequest("timeout must be a number of seconds")
                result = ctx.exec(_text(request, "command"), timeout)
                return {"value": dataclasses.asdict(result)}
            if op == "write_file":
                ctx.write_file(_text(request, "path"), _text(request, "content"))
                return {"value": None}
            if op == "read_file":
                return {"value": ctx.read_file(_text(request, "path"))}
            raise _BadRequest(f"unknown op {op!r}")
        except _BadRequest as exc:
            return {"error": _refusal(str(exc))}
        except QuotaExhausted as exc:
            self.fatal.append(exc)
            return {"error": {"kind": "quota", "key": exc.key}}
        except FileNotFoundError as exc:
            return {"error": {"kind": "not_found", "message": str(exc)}}
        except AgevalError as exc:
            self.fatal.append(exc)
            return {"error": {"kind": "ageval", "code": exc.code, "message": exc.message}}
        except Exception as exc:  # an executor's failure: the run ends with it, as in-process
            self.fatal.append(exc)
            return {"error": {"kind": "ageval", "code": "run_py_call_failed", "message": str(exc)}}

    def _end(self, exit_code: int, lost: bool) -> None:
        tail = bytes(self.output).decode("utf-8", errors="replace").strip() or None
        if self.ctx.closed:
            raise QuotaExhausted("wall_time_seconds")
        if self.done is None:
            if self.fatal:
                raise self.fatal[0]
            if lost:
                raise EnvironmentFailure(
                    "environment_lost",
                    "run.py's harness container stopped or was removed while run.py ran",
                    hint="not the agent's fault: ageval run --retry-infra tries the attempt again",
                )
            raise AgevalError(
                "run_py_failed",
                f"run.py's harness ended without a result (exit {exit_code})",
                hint=tail,
            )
        error = self.done.get("error")
        if not isinstance(error, dict):
            return
        kind = str(error.get("type"))
        if self.fatal and kind in ("QuotaExhausted", "AgevalError"):
            raise self.fatal[0]  # what ageval refused, raised again in run.py: the same end
        raise AgevalError(
            "run_py_failed",
            f"run.py raised {kind}: {error.get('message')}",
            hint=str(error.get("traceback") or "")[-1500:] or tail,
        )


class _BadRequest(Exception):
    pass


def _text(request: dict[str, Any], name: str) -> str:
    value = request.get(name)
    if not isinstance(value, str):
        raise _BadRequest(f"{name} must be a string")
    return value


def _refusal(message: str) -> dict[str, Any]:
    return {"kind": "ageval", "code": "run_py_request_invalid", "message": message}
