"""codex (codex-acp's native binary), bound by name (`--agent codex --model openai/...`), end
to end on both task formats, over the OpenAI responses API."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from tests.integration.agents.catalog.harness import Attempt
from tests.integration.conftest import committed_image

TOKEN_PREFIX = "ageval-gw-"


def check_token_in_no_file(attempt: Attempt) -> None:
    """Not even the gateway's token is written into a file (codex's shell snapshots would
    hold the whole environment)."""
    run_key = next(n["key"] for n in attempt.result["nodes"] if n["kind"] == "run")
    image = committed_image(run_key)
    codex_home = subprocess.run(
        ["docker", "run", "--rm", image, "ls", "/attempt/home/.codex"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert "config.toml" in codex_home and "shell_snapshots" not in codex_home, codex_home
    found = subprocess.run(
        ["docker", "run", "--rm", image, "grep", "-rlsF", TOKEN_PREFIX, "/attempt", "/tmp"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert found.stdout.split() == ["/tmp/ageval-probe.txt"], found.stdout


@pytest.mark.integration
@pytest.mark.slow
def test_codex_solves_harbor_hello_and_an_ageval_task_by_name(harness_for: Any) -> None:
    harness = harness_for("codex", "openai/gpt-5.4-mini")
    for attempt in (harness.harbor_hello(), harness.ageval_task()):
        harness.check_all(attempt)
        check_token_in_no_file(attempt)
