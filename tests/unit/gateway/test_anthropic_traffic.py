"""Claude Code's traffic through the gateway, against the mock model's Anthropic messages API:
token counts are relayed and recorded, with no tokens or cost of their own, and a replay matches
a re-run whose session id (`metadata.user_id`) is new."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from agevalx.agents.mockllm import PROMPT_TOKENS, MockLLM
from agevalx.gateway.recording import TrafficLog
from agevalx.gateway.replaying import TrafficReplay
from agevalx.gateway.routes import Upstream
from agevalx.gateway.server import Gateway
from agevalx.redaction import Redactor

KEY = "sk-ant-real-key-0123456789"
MODEL = "claude-sonnet-4-5"
CALL = {"name": "mcp__acp__Bash", "arguments": {"command": "echo 42 > /tmp/answer.txt"}}
SCRIPT: list[dict[str, Any]] = [{"tool_call": CALL}, {"message": "I wrote it."}]
TOOLS = [{"name": "mcp__acp__Bash", "input_schema": {"type": "object"}}]
FIRST = "c28b8e59-32b0-454c-907c-95796c28a4ee"
SECOND = "9a56ad8c-a4fa-4214-8ced-fc0bbd21714e"
"""Two sessions' random ids, as Claude Code makes them."""
HEADERS = {
    "anthropic-version": "2023-06-01",
    "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
}


def _session(session: str) -> list[tuple[str, dict[str, Any]]]:
    """What Claude Code sends in one session: a token count, then two turns."""
    user = "7e7039438c1415b63b8cdaae3ec6a07a4d96b82bffd8589c8f1a5ada692c5801"
    metadata = {"user_id": f"user_{user}_account__session_{session}"}
    turn = {"model": MODEL, "max_tokens": 32000, "tools": TOOLS, "metadata": metadata}
    ask = [{"role": "user", "content": "Write 42 to /tmp/answer.txt."}]
    answered = [
        *ask,
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_call_0_0"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_call_0_0"}]},
    ]
    count = {"model": MODEL, "messages": [{"role": "user", "content": "foo"}], "tools": TOOLS}
    return [
        ("/v1/messages/count_tokens?beta=true", count),
        ("/v1/messages?beta=true", {**turn, "messages": ask, "stream": True}),
        ("/v1/messages?beta=true", {**turn, "messages": answered, "stream": True}),
    ]


def _post(gateway: Gateway, token: str, path: str, body: dict[str, Any]) -> tuple[int, bytes]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{gateway.port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "x-api-key": token, **HEADERS},
    )
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@pytest.mark.unit
def test_claude_codes_traffic_is_counted_recorded_and_replayed(tmp_path: Path) -> None:
    path = tmp_path / "model.jsonl"
    log = TrafficLog(path, Redactor([KEY]))
    with MockLLM(SCRIPT) as mock, Gateway() as gateway:
        route = gateway.register(Upstream(base_url=mock.url, api_key=KEY), log.recorder("solver"))
        answers = [_post(gateway, route.token, *request) for request in _session(FIRST)]
        assert [status for status, _ in answers] == [200, 200, 200]
        assert json.loads(answers[0][1]) == {"input_tokens": PROMPT_TOKENS}
        assert mock.remaining == 0
    stats = route.stats.summary()
    assert stats["requests"] == 3
    assert stats["prompt_tokens"] == 2 * PROMPT_TOKENS
    assert stats["completion_tokens"] == 8 + 3, "8 per tool call, then three words"
    assert stats["cost_usd"] != "unknown", "the model has a price; a token count has no cost"
    recorded = [json.loads(line) for line in path.read_text().splitlines()]
    assert [entry["path"] for entry in recorded] == ["/v1/messages/count_tokens"] + [
        "/v1/messages"
    ] * 2
    assert [entry["streamed"] for entry in recorded] == [False, True, True]
    assert KEY not in path.read_text()

    replay = TrafficReplay.read(path, Redactor([KEY]))
    with Gateway() as gateway:
        route = gateway.register(
            Upstream(base_url="http://127.0.0.1:9"), None, replay.role("solver")
        )
        replayed = [_post(gateway, route.token, *request) for request in _session(SECOND)]
    assert replay.divergence is None, replay.divergence
    assert [status for status, _ in replayed] == [200, 200, 200]
    assert replayed[2][1].count(b"event: message_stop") == 1


@pytest.mark.unit
def test_a_replayed_turn_that_asks_otherwise_diverges(tmp_path: Path) -> None:
    path = tmp_path / "model.jsonl"
    log = TrafficLog(path, Redactor([KEY]))
    with MockLLM(SCRIPT) as mock, Gateway() as gateway:
        route = gateway.register(Upstream(base_url=mock.url, api_key=KEY), log.recorder("solver"))
        for request in _session(FIRST):
            _post(gateway, route.token, *request)
    replay = TrafficReplay.read(path, Redactor([KEY]))
    count, turn, _ = _session(SECOND)
    other = {**turn[1], "messages": [{"role": "user", "content": "Write 41."}]}
    with Gateway() as gateway:
        route = gateway.register(
            Upstream(base_url="http://127.0.0.1:9"), None, replay.role("solver")
        )
        assert _post(gateway, route.token, *count)[0] == 200
        status, data = _post(gateway, route.token, turn[0], other)
    assert status == 409 and b"model_traffic_diverged" in data
    assert replay.divergence is not None
    assert replay.divergence.difference.startswith("/messages/0/content")
