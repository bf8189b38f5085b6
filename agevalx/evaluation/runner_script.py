"""Runs a task's evaluator.py inside the scoring container. Standard library only.

Copied into the container and run by ageval's own Python (evaluation/runtime.py) as
`runner_script.py <context.json> <result.json>`.
It builds the `ctx` handed to `evaluate(ctx)`, checks what comes back, and writes one JSON
object: {"status": "PASS"|"FAIL", "score": float|null, "details": {...}} or, for anything
else, {"status": "ERROR", "error": {"type", "message", "traceback"}}. Without scoring hosts it
also prints that object last on stdout, on a line after the context's `result_mark`, so ageval
reads it from the exec's output instead of copying result.json out.

When the task declares `evaluation.environments`, `ctx.environment(name)` reaches those
scoring hosts through ageval on the host: one JSON request per line on the runner's original
stdout, one JSON answer per line on its stdin (the evaluator's own prints go to stderr).
"""

from __future__ import annotations

import base64
import importlib.util
import json
import math
import os
import sys
import traceback
from pathlib import Path
from typing import IO, Any


class ScoringHostError(RuntimeError):
    """A scoring host could not do what the evaluator asked (the message starts with a code)."""


class _Channel:
    """Requests to ageval, one JSON line each way."""

    def __init__(self, requests: IO[str], answers: IO[str]) -> None:
        self._requests, self._answers = requests, answers

    def call(self, **request: Any) -> dict[str, Any]:
        self._requests.write(json.dumps(request) + "\n")
        self._requests.flush()
        line = self._answers.readline()
        if not line:
            raise ScoringHostError("channel_closed: ageval closed the scoring-host channel")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise ScoringHostError(f"{answer['error']}: {answer.get('message', '')}")
        return answer


class CommandResult:
    """A command run in a scoring host."""

    def __init__(self, exit_code: int, output: str) -> None:
        self.exit_code = exit_code
        self.output = output

    def __repr__(self) -> str:
        return f"CommandResult(exit_code={self.exit_code}, output={self.output[-200:]!r})"


class ScoringHost:
    """A named scoring host (`evaluation.environments`), started on its first use."""

    def __init__(self, name: str, channel: _Channel) -> None:
        self.name = name
        self._channel = channel

    def exec(self, command: str, timeout: float | None = None, workdir: str = "/") -> CommandResult:
        """Run `command` through `sh -c` in the host; its exit code and output."""
        answer = self._channel.call(
            op="exec", host=self.name, command=command, timeout=timeout, workdir=workdir
        )
        return CommandResult(int(answer["exit_code"]), str(answer["output"]))

    def read_file(self, path: str) -> bytes:
        """A regular file of the host (FileNotFoundError when there is none)."""
        try:
            answer = self._channel.call(op="read_file", host=self.name, path=path)
        except ScoringHostError as exc:
            if str(exc).startswith("file_not_found"):
                raise FileNotFoundError(path) from None
            raise
        return base64.b64decode(answer["data"])

    def read_text(self, path: str) -> str:
        return self.read_file(path).decode()

    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        """Write a file in the host (its directory is created)."""
        content = data.encode() if isinstance(data, str) else data
        self._channel.call(
            op="write_file",
            host=self.name,
            path=path,
            data=base64.b64encode(content).decode(),
            mode=mode,
        )


class EvaluationContext:
    """What evaluate(ctx) receives."""

    def __init__(self, context: dict[str, Any], channel: _Channel | None = None) -> None:
        self.workspace = Path(context["workspace"])
        self.home = Path(context["home"])
        self.task_dir = Path(context["task_dir"])
        self.params: dict[str, Any] = context.get("params", {})
        self.run: dict[str, Any] = context.get("run", {})
        self.limit: str | None = context.get("limit")
        self.environments: list[str] = list(context.get("environments", []))
        self._channel = channel
        self._hosts: dict[str, ScoringHost] = {}

    def environment(self, name: str) -> ScoringHost:
        """The scoring host `name` of evaluation.environments."""
        if self._channel is None or name not in self.environments:
            raise LookupError(f"the task declares no scoring environment {name!r}")
        return self._hosts.setdefault(name, ScoringHost(name, self._channel))

    def read_text(self, relative: str) -> str:
        """A file of the workspace as text."""
        return (self.workspace / relative).read_text()


def _check(result: Any) -> dict[str, Any]:
    if not isinstance(result, dict):
        raise TypeError(f"evaluate(ctx) must return a dict, got {type(result).__name__}")
    status = result.get("status")
    if status not in ("PASS", "FAIL"):
        raise ValueError(f"status must be 'PASS' or 'FAIL', got {status!r}")
    score = result.get("score")
    if score is not None:
        finite = isinstance(score, int | float) and not isinstance(score, bool)
        if not finite or not math.isfinite(score):
            raise ValueError(f"score must be a finite number, got {score!r}")
        score = float(score)
    details = result.get("details", {})
    json.dumps(details)
    return {"status": status, "score": score, "details": details}


def _image_packages(version: str) -> list[str]:
    """The task image's site-packages, searched after ageval's standard library: an evaluator
    may import what the image installed, never shadow the standard library with it."""
    candidates = [
        f"/usr/local/lib/python{version}/site-packages",
        f"/usr/local/lib/python{version}/dist-packages",
        f"/usr/lib/python{version}/site-packages",
        "/usr/lib/python3/dist-packages",
    ]
    return [path for path in candidates if Path(path).is_dir()]


def _evaluate(context: dict[str, Any], channel: _Channel | None) -> dict[str, Any]:
    path = Path(context["evaluator"])
    sys.path.extend(_image_packages(str(context.get("python_version", ""))))
    spec = importlib.util.spec_from_file_location("evaluator", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    spec.loader.exec_module(module)
    return _check(module.evaluate(EvaluationContext(context, channel)))


def main() -> None:
    context = json.loads(Path(sys.argv[1]).read_text())
    channel = None
    if context.get("environments"):
        requests = os.fdopen(os.dup(1), "w")
        os.dup2(2, 1)  # the evaluator's prints go to stderr, never into the channel
        channel = _Channel(requests, sys.stdin)
    try:
        outcome = _evaluate(context, channel)
    except BaseException as exc:  # anything the evaluator does wrong is an ERROR result
        outcome = {
            "status": "ERROR",
            "error": {
                "type": type(exc).__name__,
                "message": str(exc)[:2000],
                "traceback": traceback.format_exc()[-8000:],
            },
        }
    document = json.dumps(outcome)
    Path(sys.argv[2]).write_text(document)
    mark = context.get("result_mark")
    if mark and channel is None:  # the result again, last on stdout: ageval reads it there
        sys.stdout.write(f"\n{mark} {document}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
