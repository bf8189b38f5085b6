"""OpenHands, bound by name (`--agent openhands --model openai/...`), end to end on both task
formats: the real `openhands acp` from its bundle (its own CPython 3.13), behind the gateway."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.integration.agents.catalog.harness import SOLVE


@pytest.mark.integration
@pytest.mark.slow
def test_openhands_solves_harbor_hello_and_an_ageval_task_by_name(harness_for: Any) -> None:
    harness = harness_for("openhands", "openai/gpt-5.4-mini")
    for attempt in (harness.harbor_hello(), harness.ageval_task()):
        harness.check_all(attempt)
        first = attempt.traffic()[0]
        assert first["path"] == "/v1/responses", first["path"]  # LiteLLM's choice for gpt-5
        tools = {tool["name"] for tool in first["request"]["tools"]}
        assert {"terminal", "finish", "file_editor"} <= tools, tools
        activity = (attempt.directory / "activity.jsonl").read_text().splitlines()
        calls = [r for r in map(json.loads, activity) if r["type"] == "agent_tool"]
        assert any(SOLVE in json.dumps(call) for call in calls), calls
