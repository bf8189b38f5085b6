"""codex (codex-acp's native binary), bound by name (`--agent codex --model openai/...`), end
to end on both task formats, over the OpenAI responses API."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.mark.integration
@pytest.mark.slow
def test_codex_solves_harbor_hello_and_an_ageval_task_by_name(harness_for: Any) -> None:
    harness = harness_for("codex", "openai/gpt-5.4-mini")
    for attempt in (harness.harbor_hello(), harness.ageval_task()):
        harness.check_all(attempt)
