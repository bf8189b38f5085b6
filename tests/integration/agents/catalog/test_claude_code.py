"""claude-code, bound by name (`--agent claude-code --model anthropic/...`), end to end on both
task formats, against the mock model's Anthropic messages API."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.agents.catalog.harness import PROBE_FILE, Attempt, _docker
from tests.integration.conftest import committed_image

MODEL = "claude-sonnet-4-5"


def _check_claude_code(attempt: Attempt) -> None:
    """Claude Code got the token in its own variable, wrote it nowhere, asked for the model
    it was given, counted its tools' tokens, and ran its command in an ACP terminal."""
    run_key = next(n["key"] for n in attempt.result["nodes"] if n["kind"] == "run")
    image = committed_image(run_key)
    probe = _docker("run", "--rm", image, "cat", PROBE_FILE).stdout
    assert "ANTHROPIC_API_KEY=ageval-gw-" in probe
    assert f"ANTHROPIC_MODEL={MODEL}" in probe
    assert "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1" in probe
    written = _docker(
        "run",
        "--rm",
        image,
        "grep",
        "-rlsF",
        "ageval-gw-",
        "/",
        "--exclude-dir=proc",
        "--exclude-dir=sys",
        "--exclude-dir=dev",
        "--exclude=ageval-probe.txt",
        check=False,
    )
    assert written.stdout == "", "the gateway token was written into a file"
    traffic = attempt.traffic()
    assert traffic[0]["path"] == "/v1/messages/count_tokens"
    turns = [t for t in traffic if t["path"] == "/v1/messages"]
    assert len(turns) == attempt.requests == 3
    assert all(t["streamed"] and t["request"]["model"] == MODEL for t in turns)
    tools = {tool["name"] for tool in turns[0]["request"]["tools"]}
    assert {"mcp__acp__Bash", "mcp__acp__Read"} <= tools and "Bash" not in tools
    activity = attempt.directory / "activity.jsonl"
    assert '"terminal/create"' in activity.read_text() and '"fs_read"' in activity.read_text()


@pytest.mark.integration
@pytest.mark.slow
def test_claude_code_solves_harbor_hello_and_an_ageval_task_by_name(harness_for: Any) -> None:
    harness = harness_for("claude-code", f"anthropic/{MODEL}")
    for attempt in (harness.harbor_hello(), harness.ageval_task()):
        harness.check_all(attempt)
        _check_claude_code(attempt)
