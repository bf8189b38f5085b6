"""Qwen Code, bound by name (`--agent qwen-code --model openai/...`), end to end on both task
formats, over OpenAI chat completions through the gateway."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.mark.integration
@pytest.mark.slow
def test_qwen_code_solves_harbor_hello_and_an_ageval_task_by_name(harness_for: Any) -> None:
    harness = harness_for("qwen-code", "openai/qwen3-coder-plus")
    for attempt in (harness.harbor_hello(), harness.ageval_task()):
        harness.check_all(attempt)
        assert attempt.requests == 2, "no side requests (classifier, memory, suggestions)"
