"""OpenClaw, bound by name (`--agent openclaw --model openai/...`), end to end on both task
formats: `openclaw acp` and the Gateway it bridges to, both from the bundle, behind the
model gateway. Its requests carry the time, session ids and the container's hostname, which
replay does not compare: `replay --model-traffic` scores the same."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.integration.agents.catalog.harness import SOLVE


@pytest.mark.integration
@pytest.mark.slow
def test_openclaw_solves_harbor_hello_and_an_ageval_task_by_name(harness_for: Any) -> None:
    harness = harness_for("openclaw", "openai/gpt-5.4-mini")
    for attempt in (harness.harbor_hello(), harness.ageval_task()):
        harness.check_all(attempt)
        activity = (attempt.directory / "activity.jsonl").read_text().splitlines()
        tools = [r for r in map(json.loads, activity) if r["type"] == "agent_tool"]
        assert [(SOLVE in t["command"], t["exit_code"]) for t in tools] == [(True, 0)], tools
        first = attempt.traffic()[0]["request"]
        assert "exec" in {tool["function"]["name"] for tool in first["tools"]}
