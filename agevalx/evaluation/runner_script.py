"""Runs a task's evaluator.py inside the scoring container. Standard library only.

Copied into the container and run by ageval's own Python (evaluation/runtime.py) as
`runner_script.py <context.json> <result.json>`.
It builds the `ctx` handed to `evaluate(ctx)`, checks what comes back, and writes one JSON
object: {"status": "PASS"|"FAIL", "score": float|null, "details": {...}} or, for anything
else, {"status": "ERROR", "error": {"type", "message", "traceback"}}.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import traceback
from pathlib import Path
from typing import Any


class EvaluationContext:
    """What evaluate(ctx) receives."""

    def __init__(self, context: dict[str, Any]) -> None:
        self.workspace = Path(context["workspace"])
        self.home = Path(context["home"])
        self.task_dir = Path(context["task_dir"])
        self.params: dict[str, Any] = context.get("params", {})
        self.run: dict[str, Any] = context.get("run", {})
        self.limit: str | None = context.get("limit")

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


def _evaluate(context: dict[str, Any]) -> dict[str, Any]:
    path = Path(context["evaluator"])
    sys.path.extend(_image_packages(str(context.get("python_version", ""))))
    spec = importlib.util.spec_from_file_location("evaluator", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    spec.loader.exec_module(module)
    return _check(module.evaluate(EvaluationContext(context)))


def main() -> None:
    context = json.loads(Path(sys.argv[1]).read_text())
    try:
        outcome = _evaluate(context)
    except BaseException as exc:  # anything the evaluator does wrong is an ERROR result
        outcome = {
            "status": "ERROR",
            "error": {
                "type": type(exc).__name__,
                "message": str(exc)[:2000],
                "traceback": traceback.format_exc()[-8000:],
            },
        }
    Path(sys.argv[2]).write_text(json.dumps(outcome))


if __name__ == "__main__":
    main()
