"""mini-swe-agent, bound by name (`--agent mini-swe-agent --model openai/...`), end to end on
both task formats: its own loop in the bundled CPython, commands through ACP terminals."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.mark.integration
@pytest.mark.slow
def test_mini_swe_agent_solves_harbor_hello_and_an_ageval_task_by_name(harness_for: Any) -> None:
    harness = harness_for("mini-swe-agent", "openai/gpt-5.4-mini")
    for attempt in (harness.harbor_hello(), harness.ageval_task()):
        harness.check_all(attempt)
