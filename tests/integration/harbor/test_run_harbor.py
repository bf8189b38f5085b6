"""`ageval run <harbor dataset>`: Harbor tasks through the build graph, cached like the rest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agevalx.cli import main

pytestmark = pytest.mark.integration

HARBOR = Path(__file__).resolve().parents[1] / "data/harbor"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["run", *args, "--agent", "oracle", "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_harbor_task_scores_as_harbor_does(copy_dataset, capsys) -> None:
    dataset = copy_dataset(HARBOR)
    code, document = run(capsys, str(dataset), "--task", "fractional")
    assert code == 0
    result = document["results"][0]
    assert result["score"] == 0.5
    assert result["details"]["extra"]["eval_raw_data"]["rewards"] == {"reward": 0.5}
    assert result["details"]["passed"] is None


def test_editing_tests_reruns_only_the_verifier(copy_dataset, capsys) -> None:
    dataset = copy_dataset(HARBOR)
    run(capsys, str(dataset), "--task", "pass")
    test_sh = dataset / "pass/tests/test.sh"
    test_sh.write_text(test_sh.read_text() + "\n# edited\n")
    code, document = run(capsys, str(dataset), "--task", "pass")
    outcome = {n["id"]: n["outcome"] for n in document["nodes"]}
    assert code == 0
    assert outcome["run:pass#0"] == "reused" and outcome["evaluate:pass#0"] == "computed"
    assert document["results"][0]["status"] == "PASS"


def test_a_harbor_dataset_needs_an_agent(copy_dataset, capsys) -> None:
    dataset = copy_dataset(HARBOR)
    code = main(["run", str(dataset), "--task", "pass", "--json"])
    assert code == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "agent_required"
