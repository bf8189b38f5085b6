"""A reward no float can hold (10^400 in reward.json) is an invalid reward, never a crash.

Scored as Harbor scores an invalid reward: score 0, not passed, WARNING
`verifier_result_invalid`; the attempt completes (FAIL), it is not an ERROR.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agevalx.cli import main

pytestmark = pytest.mark.integration

REWARDS = Path(__file__).resolve().parents[1] / "data/hostile/harbor-rewards"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["run", *args, "--agent", "oracle", "--json"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, json.loads(captured.out)


@pytest.mark.parametrize("task", ["overflow-json", "overflow-key"])
def test_an_overflowing_reward_scores_as_an_invalid_reward(
    copy_dataset, capsys: pytest.CaptureFixture[str], task: str
) -> None:
    dataset = copy_dataset(REWARDS)
    code, document = run(capsys, str(dataset), "--task", task)
    assert code == 0, document
    (result,) = document["results"]
    assert (result["status"], result["score"], result["error"]) == ("FAIL", 0.0, None)
    details = result["details"]
    assert (details["passed"], details["verifier"]) == (False, "invalid")
    assert details["warning"] == "verifier_result_invalid"
    assert details["extra"]["eval_raw_data"]["rewards"] == {}
