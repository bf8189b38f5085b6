"""Gemini CLI, bound by name (`--agent gemini-cli --model gemini/...`), end to end on both
task formats, over the Gemini API through the gateway."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.mark.integration
@pytest.mark.slow
def test_gemini_cli_solves_harbor_hello_and_an_ageval_task_by_name(harness_for: Any) -> None:
    harness = harness_for("gemini-cli", "gemini/gemini-2.5-flash")
    for attempt in (harness.harbor_hello(), harness.ageval_task()):
        harness.check_all(attempt)
        paths = {exchange["path"] for exchange in attempt.traffic()}
        assert paths == {"/v1beta/models/gemini-2.5-flash:streamGenerateContent"}, paths
