"""Infrastructure faults from outside end an attempt as infrastructure, never as the agent's
failure, and `--retry-infra` tries it again: the attempt container killed while its agent
runs (`environment_lost`), the scoring container removed while evaluator.py runs
(`scoring_environment_lost`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.security.hostile import ageval_task

pytestmark = [pytest.mark.integration]  # kills containers by owner (its own)

SLOW_SOLVE = "sleep 6; echo ok > /attempt/workspace/out.txt\n"
SOLVE = "echo ok > /attempt/workspace/out.txt\n"
EVALUATOR = """import time

def evaluate(ctx):
    time.sleep({sleep})
    ok = (ctx.workspace / 'out.txt').read_text().strip() == 'ok'
    return {{'status': 'PASS' if ok else 'FAIL'}}
"""


def _start(dataset: Path, retries: int) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "agevalx", "run", str(dataset), "--json"]
    command += ["--retry-infra", str(retries), "--fresh"]
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ)
    )


def _hit(process: subprocess.Popen[str], kind: str, action: list[str], after: float) -> str:
    """Once a running container labelled `ageval=<kind>` of `process` appears (and has run
    `after` seconds), apply `docker <action> <id>` to it; its id."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        listing = subprocess.run(
            [
                "docker", "ps", "-q", "--filter", f"label=ageval={kind}",
                "--filter", f"label=ageval.owner.pid={process.pid}",
            ],
            capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
        if listing:
            time.sleep(after)
            subprocess.run(["docker", *action, listing[0]], capture_output=True, check=True)
            return listing[0]
        time.sleep(0.1)
    raise AssertionError(f"no {kind} container of the run appeared: {process.communicate()}")


def _finish(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=300)
    document: dict[str, Any] = json.loads(out)
    (result,) = document["results"]
    return {"code": process.returncode, "result": result, "stderr": err}


def _stored(dataset: Path, result: dict[str, Any]) -> dict[str, Any]:
    path = dataset / ".ageval/runs" / result["attempt_id"] / "result.json"
    return dict(json.loads(path.read_text()))


FAULTS = {
    # fault: (solve.sh, evaluator sleep, container kind, docker action, seconds after the
    # container appears, code, stage)
    "attempt container killed": (
        SLOW_SOLVE, 0, "attempt", ["kill"], 1.5, "environment_lost", "run"
    ),
    "scoring container removed": (
        SOLVE, 5, "scoring", ["rm", "-f"], 1.5, "scoring_environment_lost", "evaluate"
    ),
    # before or while the evaluator is copied in and started: any step it breaks
    "scoring container killed at once": (
        SOLVE, 5, "scoring", ["kill"], 0.0, "scoring_environment_lost", "evaluate"
    ),
}  # fmt: skip


@pytest.mark.parametrize("retries", [0, 1])
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_container_lost_from_outside_is_infrastructure_and_retried(
    tmp_path: Path, docker_engine: object, fault: str, retries: int
) -> None:
    solve, sleep, kind, action, after, code, stage = FAULTS[fault]
    dataset = ageval_task(tmp_path / "ds", solve, EVALUATOR.format(sleep=sleep))
    process = _start(dataset, retries)
    _hit(process, kind, action, after)
    ended = _finish(process)
    result = ended["result"]
    if retries == 0:
        assert ended["code"] == 1 and result["status"] == "ERROR", ended
        error = result["error"]
        assert (error["code"], error["class"], error["stage"]) == (code, "infrastructure", stage)
    else:
        assert ended["code"] == 0 and result["status"] == "PASS", result.get("error")
        tries = _stored(dataset, result)["tries"]
        assert [(t["code"], t["class"], t["stage"]) for t in tries] == [
            (code, "infrastructure", stage)
        ], tries
