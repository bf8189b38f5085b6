"""Seed rules that were locked but never acted (issue 14): the wall clock running out in
run.py's last ctx.exec, and publishable artifacts listed in result.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import xxhash

from agevalx.cli import main

pytestmark = pytest.mark.integration

DATA = Path(__file__).resolve().parents[1] / "data/seed-rules"


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["run", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_the_wall_clock_running_out_in_the_last_exec_is_the_results_limit(
    copy_dataset: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = copy_dataset(DATA)
    code, document = run_json(capsys, str(dataset), "--task", "slow-last")
    (result,) = document["results"]
    assert code == 0 and result["status"] == "PASS", json.dumps(result.get("error"))
    assert result["limit"] == "wall_time_seconds", result


def test_publishable_artifacts_are_listed_in_the_result_with_their_digests(
    copy_dataset: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = copy_dataset(DATA)
    code, document = run_json(capsys, str(dataset), "--task", "publishes")
    (result,) = document["results"]
    assert code == 0 and result["status"] == "PASS", json.dumps(result.get("error"))
    listed = {artifact["id"]: artifact for artifact in result["artifacts"]}
    assert listed["report"]["path"] == "out/report.txt"
    assert listed["report"]["producer"] == "solver"
    assert listed["report"]["digest"] == xxhash.xxh3_128_hexdigest(b"the report\n")
    assert listed["absent"]["digest"] is None  # declared, but the run left nothing there
    on_disk = json.loads(
        (dataset / ".ageval/runs" / result["attempt_id"] / "result.json").read_text()
    )
    assert on_disk["artifacts"] == result["artifacts"]
