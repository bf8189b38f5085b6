"""--max-cost: the job stops spending at its limit, says what it did not run, and the same
command with a higher limit continues it without paying twice."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agevalx.agents.mockllm import MockLLM
from agevalx.cli import main
from agevalx.testing.soak import MODEL, SCRIPT, write_soak_dataset
from tests.integration.agents.catalog.harness import ensure_built

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TASKS = 4
COST = 0.01
"""USD the mock reports for every reply: an attempt (two model turns) costs $0.02."""


def run(dataset: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, Any]:
    args = ["run", str(dataset), "--agent", "pi", "--model", MODEL, "--max-concurrent", "1"]
    code = main([*args, *extra, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_job_stops_at_its_cost_limit_and_a_higher_limit_continues_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ensure_built("pi")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-spend-limit-test")
    with MockLLM(SCRIPT, per_conversation=True, cost=COST) as mock:
        dataset = write_soak_dataset(tmp_path / "ds", TASKS, base_url=mock.url, egress=None)
        # $0.03: the first attempt spends $0.02, the second reaches the limit with its first
        # turn and is stopped at its second; the last two never start.
        code, first = run(dataset.root, capsys, "--max-cost", "0.03")
        assert code == 1, first
        assert len(mock.completions) == 3
        assert first["not_run"] == 2
        assert first["spend"]["reached"] == "job_cost"
        assert first["spend"]["cost_usd"] == pytest.approx(0.03)
        sealed, stopped = first["results"]
        assert sealed["status"] == dataset.designed()[sealed["task_id"]]
        assert stopped["status"] == "ERROR" and stopped["limit"] == "job_cost"
        assert stopped["error"]["code"] == "job_limit_reached"
        assert stopped["error"]["class"] == "infrastructure"
        assert first["summary"]["run"]["not_run"] == 2
        assert first["summary"]["run"]["stopped_by_limit"] == 1

        code, second = run(dataset.root, capsys, "--max-cost", "1")
        assert code == 0, second
        assert second["continued"] == [stopped["attempt_id"]]
        assert {r["task_id"]: r["status"] for r in second["results"]} == dataset.designed()
        resumed = next(r for r in second["results"] if r["attempt_id"] == stopped["attempt_id"])
        assert resumed["usage"]["solver"]["requests"] == 2
        # Every turn of every attempt was paid exactly once: 4 attempts x 2 turns.
        assert len(mock.completions) == TASKS * len(SCRIPT)
        assert second["spend"]["cost_usd"] == pytest.approx(TASKS * len(SCRIPT) * COST)
        assert second["spend"]["reached"] is None
