"""Garbage JSON-RPC from an agent: no traceback on ageval's stderr, a coded error when fatal.

A fake agent (a local process, `LocalSandbox`) answers the handshake, then writes hostile
lines during the prompt turn. Lines the SDK cannot route are noise (kept in the transcript);
what the SDK rejects itself is logged by it, and those records go to the transcript instead
of stderr; a line nested absurdly deep is `agent_protocol_error`.
"""

from __future__ import annotations

import json
import logging
import shlex
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from agevalx.agents.acp.channel import MAX_JSON_DEPTH
from agevalx.agents.base import AgentError

from .conftest import AgentRun

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]

FAKE_AGENT = textwrap.dedent(
    """
    import json, sys
    hostile = json.loads(sys.argv[1])
    def send(message):
        sys.stdout.write(json.dumps(message) + "\\n")
        sys.stdout.flush()
    for line in sys.stdin:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": ident, "result": {"protocolVersion": 1}})
        elif method == "session/new":
            send({"jsonrpc": "2.0", "id": ident, "result": {"sessionId": "s1"}})
        elif method == "session/prompt":
            for item in hostile:
                text = eval(item[1:]) if item.startswith("=") else item
                sys.stdout.write(text + "\\n")
            sys.stdout.flush()
            send({"jsonrpc": "2.0", "id": ident, "result": {"stopReason": "end_turn"}})
    """
)
"""Writes each hostile line (`=expr`: the value of a Python expression) during the turn."""

GARBAGE = [
    '{"jsonrpc": "2.0", "id": {"not": "hashable"}, "result": {}}',
    '{"jsonrpc": "2.0", "id": [1], "method": "fs/read_text_file", "params": {}}',
    '{"jsonrpc": "2.0", "id": 7, "method": 42, "params": {}}',
    '{"jsonrpc": "2.0", "method": "session/update", "params": "garbage"}',
    '{"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1"}}',
    '{"jsonrpc": "2.0", "method": "session/update", "params": {"update": {"sessionUpdate": 1}}}',
    '{"jsonrpc": "2.0", "method": "no/such/notification", "params": {}}',
    '{"jsonrpc": "2.0", "id": 8, "method": "fs/read_text_file", "params": {"path": 5}}',
    '{"jsonrpc": "2.0", "id": 9, "method": "terminal/output", "params": []}',
    '{"jsonrpc": "2.0", "id": 999, "result": "an answer to nothing"}',
]


def _entry(hostile: list[str]) -> str:
    return shlex.join([sys.executable, "-c", FAKE_AGENT, json.dumps(hostile)])


def test_garbage_json_rpc_is_kept_in_the_transcript_and_the_turn_completes(
    agent_run: AgentRun, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    result = agent_run(entry=_entry(GARBAGE))
    assert result.stop_reason == "end_turn"
    kinds = [entry["type"] for entry in agent_run.transcript]
    noise = [e["text"] for e in agent_run.transcript if e["type"] == "agent_stdout"]
    assert noise == GARBAGE[:4]
    sdk = [entry for entry in agent_run.transcript if entry["type"] == "acp_sdk_log"]
    assert sdk and all(entry["level"] == "ERROR" for entry in sdk)
    assert any("session/update" in entry["message"] for entry in sdk)
    assert "ValidationError" in sdk[0]["error"]
    assert kinds.count("acp_sdk_log") == len(sdk)
    sdk_files = {Path(record.pathname).parts[-2] for record in caplog.records}
    assert "acp" not in sdk_files, "an SDK record reached the log handlers"


def test_garbage_json_rpc_prints_no_traceback_on_stderr(tmp_path: Path) -> None:
    """The same agent run by a process of its own, without pytest's log capture."""
    driver = textwrap.dedent(
        f"""
        import json, sys, time
        from agevalx.agents.acp import LocalSandbox
        from agevalx.agents.acp.executor import AcpExecutor
        from agevalx.agents.base import Container, Invocation
        root = {str(tmp_path)!r}
        container = Container(id="local", workdir=root + "/w", home=root + "/h")
        invocation = Invocation(
            role="solver", prompt="go", profile={{"entry": {_entry(GARBAGE)!r}}},
            container=container, deadline=time.monotonic() + 30, record=lambda a: None,
            transcript=lambda e: None, environ={{}}, task_dir=root,
        )
        print(AcpExecutor(sandbox_factory=LocalSandbox).invoke(invocation).stop_reason)
        import logging
        logging.getLogger("ageval.check").warning("other warnings still print")
        """
    )
    (tmp_path / "w").mkdir()
    (tmp_path / "h").mkdir()
    finished = subprocess.run(
        [sys.executable, "-c", driver], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert finished.stdout.strip() == "end_turn", finished.stderr
    assert finished.stderr == "other warnings still print\n"


@pytest.mark.parametrize("depth", [200_000, MAX_JSON_DEPTH + 1])
def test_a_line_nested_too_deep_is_a_protocol_error(agent_run: AgentRun, depth: int) -> None:
    deep = f'="[" * {depth} + "]" * {depth}'
    started = time.monotonic()
    with pytest.raises(AgentError) as caught:
        agent_run(entry=_entry([deep]))
    assert caught.value.code == "agent_protocol_error"
    assert f"nested deeper than {MAX_JSON_DEPTH} levels" in caught.value.message
    assert "during session/prompt" in caught.value.message
    assert time.monotonic() - started < 15


def test_a_deep_but_reasonable_message_is_served(agent_run: AgentRun) -> None:
    nested = "[" * 40 + "]" * 40
    line = '{"jsonrpc": "2.0", "method": "_ageval/probe", "params": {"deep": ' + nested + "}}"
    assert agent_run(entry=_entry([line])).stop_reason == "end_turn"
    assert not [entry for entry in agent_run.transcript if entry["type"] == "acp_sdk_log"]
