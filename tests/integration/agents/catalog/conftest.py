"""The catalog agents' fixture: `harness_for(agent, model)` (see harness.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.agents.catalog.harness import AgentHarness


@pytest.fixture
def harness_for(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    docker_engine: object,
) -> Any:
    """`harness_for("claude-code", "anthropic/claude-sonnet-4-5")` -> an `AgentHarness`."""

    def make(agent: str, model: str) -> AgentHarness:
        return AgentHarness(agent, model, tmp_path, monkeypatch, capsys)

    return make
