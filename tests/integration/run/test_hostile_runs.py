"""`ageval run` on the real Docker engine against small hostile datasets (data/hostile/)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from agevalx.cli import main

pytestmark = pytest.mark.integration

HOSTILE = Path(__file__).resolve().parents[1] / "data/hostile"


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["run", *args, "--json"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, json.loads(captured.out)


def test_a_scripted_step_that_breaks_fails_the_attempt_well_before_its_wall_time(
    copy_dataset, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = copy_dataset(HOSTILE / "ageval")
    started = time.monotonic()
    code, document = run_json(capsys, str(dataset), "--task", "bad-step")
    elapsed = time.monotonic() - started
    assert code == 1
    (result,) = document["results"]
    assert result["status"] == "ERROR"
    error = result["error"]
    assert (error["code"], error["stage"]) == ("agent_error", "run")
    assert "script step 2 (terminal) failed" in error["message"]
    assert elapsed < 60, f"{elapsed:.0f} s: the attempt waited for its 120 s wall time"


def test_a_non_ascii_ageval_task_id_runs_scores_and_replays(
    copy_dataset, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = copy_dataset(HOSTILE / "ageval")
    # lint calls the id not portable: the run is refused before anything is built ...
    code, document = run_json(capsys, str(dataset), "--task", "täsk-ü")
    assert (code, document["error"]["code"]) == (1, "lint_errors"), document
    assert "task_id_not_portable" in document["error"]["message"]
    # ... unless the user runs it anyway
    args = ("--task", "täsk-ü", "--keep-recovery-state", "--no-lint")
    code, document = run_json(capsys, str(dataset), *args)
    assert code == 0, document
    (result,) = document["results"]
    assert (result["status"], result["task_id"]) == ("PASS", "täsk-ü")
    replay = ["replay", str(dataset), "--run", result["attempt_id"], "--evaluate", "--json"]
    assert main(replay) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert replayed["status"] == "matched", replayed
    assert replayed["evaluation"]["status"] == "PASS"


def test_a_non_ascii_harbor_task_name_runs_to_pass(
    copy_dataset, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = copy_dataset(HOSTILE / "harbor-names")
    code, document = run_json(capsys, str(dataset), "--agent", "oracle", "--no-lint")
    assert code == 0, document
    (result,) = document["results"]
    assert (result["status"], result["task_id"], result["score"]) == ("PASS", "täsk-ü", 1.0)
