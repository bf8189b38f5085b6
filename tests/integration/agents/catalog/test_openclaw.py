"""OpenClaw, bound by name (`--agent openclaw --model openai/...`), end to end on both task
formats: `openclaw acp` and the Gateway it bridges to, both from the bundle, behind the
model gateway. Its requests carry the time, session ids and the container's hostname, which
replay does not compare: `replay --model-traffic` scores the same. Its Gateway serves no
Control UI, so the run's checkpoint carries no copy of the UI's web assets."""

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
        records = list(map(json.loads, activity))
        tools = [r for r in records if r["type"] == "agent_tool"]
        assert [(SOLVE in t["command"], t["exit_code"]) for t in tools] == [(True, 0)], tools
        # no Control UI: its 52 MB of web assets are not copied into the home at each start
        # (a checkpoint held 55.8 MB with them, 1.6 MB without)
        (checkpoint,) = [r for r in records if r["type"] == "checkpoint"]
        assert checkpoint["detail"]["bytes"] < 8_000_000, checkpoint
        first = attempt.traffic()[0]["request"]
        assert "exec" in {tool["function"]["name"] for tool in first["tools"]}
