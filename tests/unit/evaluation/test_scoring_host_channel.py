"""The channel between evaluator.py's runner and ageval: requests one JSON line each way."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agevalx.environments.container import ContainerSpec
from agevalx.environments.engine import EnvironmentFailure
from agevalx.evaluation.hosts import ScoringHosts
from agevalx.evaluation.runtime import RUNNER

pytestmark = pytest.mark.unit

EVALUATOR = """\
def evaluate(ctx):
    print("printed by the evaluator")
    db = ctx.environment("db")
    db.write_file("/srv/x.txt", "hi")
    ran = db.exec("cat /srv/x.txt")
    try:
        ctx.environment("elsewhere")
    except LookupError as exc:
        unknown = str(exc)
    return {"status": "PASS", "details": {"ran": [ran.exit_code, ran.output],
            "read": db.read_text("/srv/x.txt"), "unknown": unknown}}
"""


def _run_runner(tmp_path: Path, answer: Any) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    (tmp_path / "evaluator.py").write_text(EVALUATOR)
    context = {
        "evaluator": str(tmp_path / "evaluator.py"),
        "workspace": str(tmp_path),
        "home": str(tmp_path),
        "task_dir": str(tmp_path),
        "environments": ["db"],
    }
    (tmp_path / "context.json").write_text(json.dumps(context))
    process = subprocess.Popen(
        [sys.executable, str(RUNNER), str(tmp_path / "context.json"), str(tmp_path / "out.json")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    requests = []
    for line in process.stdout:
        requests.append(json.loads(line))
        process.stdin.write(json.dumps(answer(requests[-1])) + "\n")
        process.stdin.flush()
    process.stdin.close()
    stderr = process.stderr.read() if process.stderr else ""
    process.wait(timeout=30)
    return json.loads((tmp_path / "out.json").read_text()), requests, stderr


def test_the_runner_sends_requests_as_json_lines_and_prints_go_to_stderr(tmp_path: Path) -> None:
    files: dict[str, str] = {}

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        if request["op"] == "write_file":
            files[request["path"]] = base64.b64decode(request["data"]).decode()
            return {}
        if request["op"] == "exec":
            return {"exit_code": 0, "output": files["/srv/x.txt"]}
        return {"data": base64.b64encode(files[request["path"]].encode()).decode()}

    outcome, requests, stderr = _run_runner(tmp_path, answer)
    assert outcome["status"] == "PASS", outcome
    assert outcome["details"] == {
        "ran": [0, "hi"],
        "read": "hi",
        "unknown": "the task declares no scoring environment 'elsewhere'",
    }
    assert [request["op"] for request in requests] == ["write_file", "exec", "read_file"]
    assert all(request["host"] == "db" for request in requests)
    assert "printed by the evaluator" in stderr


def test_an_error_answer_is_an_exception_in_the_evaluator(tmp_path: Path) -> None:
    outcome, _, _ = _run_runner(
        tmp_path, lambda request: {"error": "scoring_host_unavailable", "message": "no image"}
    )
    assert outcome["status"] == "ERROR"
    assert outcome["error"]["type"] == "ScoringHostError"
    assert outcome["error"]["message"] == "scoring_host_unavailable: no image"


def _no_image(name: str) -> str:
    raise EnvironmentFailure("image_unavailable", f"the image for {name} cannot be pulled")


def _never_started(spec: ContainerSpec) -> Any:
    raise AssertionError("no container may start")


def test_a_host_without_image_is_recorded_as_the_evaluations_failure() -> None:
    hosts = ScoringHosts(["db"], _no_image, _never_started, ContainerSpec(image="", name_hint="e"))
    answer = hosts.answer({"op": "exec", "host": "db", "command": "true"})
    assert answer["error"] == "scoring_host_unavailable"
    assert hosts.failure is not None and hosts.failure.field == "evaluation.environments.db"
    assert hosts.answer({"op": "exec", "host": "other"})["error"] == "unknown_scoring_host"
