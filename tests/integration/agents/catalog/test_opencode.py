"""opencode, bound by name (`--agent opencode --model openai/...`), end to end on both task
formats: its real binary from the bundle, configured offline, behind the gateway."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.integration.agents.catalog.harness import SOLVE


@pytest.mark.integration
@pytest.mark.slow
def test_opencode_solves_harbor_hello_and_an_ageval_task_by_name(harness_for: Any) -> None:
    harness = harness_for("opencode", "openai/gpt-5.4-mini")
    for attempt in (harness.harbor_hello(), harness.ageval_task()):
        harness.check_all(attempt)
        activity = (attempt.directory / "activity.jsonl").read_text().splitlines()
        tools = [r for r in map(json.loads, activity) if r["type"] == "agent_tool"]
        assert [(SOLVE in t["command"], t["exit_code"]) for t in tools] == [(True, 0)], tools
        first = attempt.traffic()[0]["request"]
        assert "bash" in {tool["function"]["name"] for tool in first["tools"]}
        assert not any("title generator" in json.dumps(m) for m in first["messages"])
