"""The mock model's Anthropic messages API, over HTTP on loopback: the shapes Claude Code
reads (blocks, stream events, usage), and which requests consume the script."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from agevalx.agents.mockapis.anthropic_messages import SIDE_TEXT
from agevalx.agents.mockllm import PROMPT_TOKENS, MockLLM
from agevalx.gateway.usage import UsageReader

CALL: dict[str, Any] = {
    "name": "mcp__acp__Bash",
    "arguments": {"command": "echo 42 > /tmp/answer.txt"},
}
TEXT = "Let me write it."
SCRIPT: list[dict[str, Any]] = [{"message": TEXT, "tool_call": CALL}, {"message": "I wrote it."}]
OUTPUT_TOKENS = len(TEXT.split()) + 8
"""The mock counts words plus 8 per tool call."""
TOOLS = [{"name": "mcp__acp__Bash", "input_schema": {"type": "object"}}]


@pytest.fixture
def mock() -> Iterator[MockLLM]:
    with MockLLM(SCRIPT) as server:
        yield server


def _post(mock: MockLLM, path: str, body: dict[str, Any]) -> tuple[str, bytes]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{mock.port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "x-api-key": "sk-test"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers.get("Content-Type", ""), response.read()


def _turn(content: str, **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1000,
        "messages": [{"role": "user", "content": content}],
        "tools": TOOLS,
        **extra,
    }


def _events(data: bytes) -> list[tuple[str, dict[str, Any]]]:
    """(event name, data) of a server-sent event stream."""
    parsed = []
    for block in data.decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if lines:
            parsed.append((lines["event"], json.loads(lines["data"])))
    return parsed


def _assembled(events: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The message a client builds from the stream, as Anthropic's SDKs do."""
    message: dict[str, Any] = {}
    partial: dict[int, str] = {}
    for _, event in events:
        kind = event["type"]
        if kind == "message_start":
            message = dict(event["message"])
            message["content"] = list(message["content"])
        elif kind == "content_block_start":
            message["content"].append(dict(event["content_block"]))
        elif kind == "content_block_delta":
            block, delta = message["content"][event["index"]], event["delta"]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            else:
                partial[event["index"]] = partial.get(event["index"], "") + delta["partial_json"]
        elif kind == "content_block_stop" and event["index"] in partial:
            message["content"][event["index"]]["input"] = json.loads(partial[event["index"]])
        elif kind == "message_delta":
            message.update(event["delta"])
            message["usage"] = {**message["usage"], **event["usage"]}
    return message


@pytest.mark.unit
def test_a_tool_call_reply_is_a_tool_use_block(mock: MockLLM) -> None:
    content_type, data = _post(mock, "/v1/messages", _turn("Write 42."))
    message = json.loads(data)
    assert content_type == "application/json"
    assert message["type"] == "message" and message["role"] == "assistant"
    assert message["model"] == "claude-sonnet-4-5"
    assert message["stop_reason"] == "tool_use"
    text, tool_use = message["content"]
    assert text == {"type": "text", "text": TEXT}
    assert tool_use["type"] == "tool_use" and tool_use["id"].startswith("toolu_")
    assert (tool_use["name"], tool_use["input"]) == (CALL["name"], CALL["arguments"])
    assert message["usage"]["input_tokens"] == PROMPT_TOKENS
    assert message["usage"]["output_tokens"] == OUTPUT_TOKENS


@pytest.mark.unit
def test_a_streamed_reply_follows_anthropics_event_sequence(mock: MockLLM) -> None:
    content_type, data = _post(mock, "/v1/messages?beta=true", _turn("Write 42.", stream=True))
    events = _events(data)
    assert content_type == "text/event-stream"
    assert all(name == event["type"] for name, event in events)
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert names.count("content_block_start") == names.count("content_block_stop") == 2
    deltas = [event["delta"]["type"] for name, event in events if name == "content_block_delta"]
    assert "text_delta" in deltas and deltas.count("input_json_delta") > 1
    message = _assembled(events)
    assert message["stop_reason"] == "tool_use"
    assert message["content"][0] == {"type": "text", "text": TEXT}
    assert message["content"][1]["input"] == CALL["arguments"]
    assert message["usage"]["input_tokens"] == PROMPT_TOKENS
    assert message["usage"]["output_tokens"] == OUTPUT_TOKENS
    reader = UsageReader()
    reader.feed_stream(data)
    usage = reader.usage()
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (
        PROMPT_TOKENS,
        OUTPUT_TOKENS,
    )
    assert usage.model == "claude-sonnet-4-5"


@pytest.mark.unit
def test_the_last_reply_ends_the_turn(mock: MockLLM) -> None:
    _post(mock, "/v1/messages", _turn("Write 42."))
    _, data = _post(mock, "/v1/messages", _turn("Write 42 again.", stream=True))
    message = _assembled(_events(data))
    assert message["stop_reason"] == "end_turn"
    assert message["content"] == [{"type": "text", "text": "I wrote it."}]
    assert mock.remaining == 0


@pytest.mark.unit
def test_side_requests_and_token_counts_leave_the_script_to_the_turns(mock: MockLLM) -> None:
    side = {
        "model": "claude-haiku-4-5",
        "max_tokens": 1,
        "messages": [{"role": "user", "content": "quota"}],
    }
    _, data = _post(mock, "/v1/messages", side)
    assert json.loads(data)["content"] == [{"type": "text", "text": SIDE_TEXT}]
    _, data = _post(mock, "/v1/messages/count_tokens?beta=true", _turn("foo"))
    assert json.loads(data) == {"input_tokens": PROMPT_TOKENS}
    assert mock.remaining == len(SCRIPT)
    _, data = _post(mock, "/v1/messages", _turn("Write 42."))
    assert json.loads(data)["stop_reason"] == "tool_use"
    assert [request.path for request in mock.completions] == ["/v1/messages"]


@pytest.mark.unit
def test_message_ids_differ_between_turns_and_repeat_for_the_same_request() -> None:
    with MockLLM(SCRIPT * 2) as mock:
        ids = [json.loads(_post(mock, "/v1/messages", _turn(text))[1])["id"] for text in "aba"]
    assert ids[0] != ids[1] and ids[0] == ids[2]
