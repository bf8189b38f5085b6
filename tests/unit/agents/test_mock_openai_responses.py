"""The mock model's OpenAI responses API (`agevalx/agents/mockapis/openai_responses.py`),
spoken to over HTTP as an agent would: streamed and not, text and tool calls, usage."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from agevalx.agents.mockllm import EXHAUSTED_TEXT, PROMPT_TOKENS, MockLLM
from agevalx.gateway.usage import UsageReader

pytestmark = pytest.mark.unit

SCRIPT: list[dict[str, Any]] = [
    {"tool_call": {"name": "exec_command", "arguments": {"cmd": "echo 42 > /tmp/answer.txt"}}},
    {"message": "I wrote 42 to /tmp/answer.txt."},
]


def _post(url: str, body: dict[str, Any]) -> tuple[str, bytes]:
    request = urllib.request.Request(
        url + "/responses",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer token"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers["Content-Type"], response.read()


def _events(data: bytes) -> list[tuple[str, dict[str, Any]]]:
    """(event name, parsed data) of a server-sent event stream."""
    events = []
    for block in data.decode().split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((fields["event"], json.loads(fields["data"])))
    return events


def test_streamed_tool_call_is_a_function_call_item_with_its_arguments_in_pieces() -> None:
    with MockLLM(SCRIPT) as mock:
        kind, data = _post(mock.url, {"model": "gpt-x", "stream": True, "input": []})
    assert kind == "text/event-stream"
    events = _events(data)
    names = [name for name, _ in events]
    assert all(name == event["type"] for name, event in events)
    assert names[:2] == ["response.created", "response.in_progress"]
    assert names[-1] == "response.completed"
    assert [event["sequence_number"] for _, event in events] == list(range(len(events)))
    added = next(event for name, event in events if name == "response.output_item.added")
    assert added["item"]["type"] == "function_call"
    assert added["item"]["arguments"] == ""
    pieces = [e["delta"] for n, e in events if n == "response.function_call_arguments.delta"]
    assert len(pieces) > 1
    arguments = json.loads("".join(pieces))
    assert arguments == {"cmd": "echo 42 > /tmp/answer.txt"}
    done = next(event for name, event in events if name == "response.output_item.done")
    assert done["item"]["call_id"] == "call_0_0"
    assert done["item"]["name"] == "exec_command"
    assert json.loads(done["item"]["arguments"]) == arguments
    completed = events[-1][1]["response"]
    assert completed["status"] == "completed"
    assert completed["model"] == "gpt-x"
    assert completed["output"] == [done["item"]]
    assert completed["usage"]["input_tokens"] == PROMPT_TOKENS
    assert completed["usage"]["output_tokens"] == 8


def test_streamed_text_arrives_as_deltas_and_in_the_completed_message() -> None:
    with MockLLM(SCRIPT[1:]) as mock:
        _, data = _post(mock.url, {"model": "m", "stream": True, "input": []})
    events = _events(data)
    text = "".join(e["delta"] for n, e in events if n == "response.output_text.delta")
    assert text == "I wrote 42 to /tmp/answer.txt."
    message = events[-1][1]["response"]["output"][0]
    assert message["type"] == "message"
    assert message["role"] == "assistant"
    assert message["content"][0] == {"type": "output_text", "text": text, "annotations": []}


def test_plain_request_gets_one_response_object_and_the_script_advances() -> None:
    with MockLLM(SCRIPT, cost=0.25) as mock:
        kind, first = _post(mock.url, {"model": "m", "input": []})
        _, second = _post(mock.url, {"model": "m", "input": []})
        _, spent = _post(mock.url, {"model": "m", "input": []})
        assert len(mock.completions) == 3
    assert kind == "application/json"
    call = json.loads(first)["output"][0]
    assert (call["type"], call["name"], call["call_id"]) == (
        "function_call",
        "exec_command",
        "call_0_0",
    )
    body = json.loads(second)
    assert body["output"][0]["content"][0]["text"] == "I wrote 42 to /tmp/answer.txt."
    assert body["usage"]["cost"] == 0.25
    assert json.loads(spent)["output"][0]["content"][0]["text"] == EXHAUSTED_TEXT


def test_a_call_to_a_declared_custom_tool_is_a_custom_tool_call_with_raw_input() -> None:
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
    script = [{"tool_call": {"name": "apply_patch", "arguments": {"input": patch}}}]
    tools = [{"type": "custom", "name": "apply_patch"}, {"type": "function", "name": "shell"}]
    with MockLLM(script) as mock:
        _, data = _post(mock.url, {"model": "m", "stream": True, "input": [], "tools": tools})
    events = _events(data)
    item = events[-1][1]["response"]["output"][0]
    assert item["type"] == "custom_tool_call"
    assert item["input"] == patch
    deltas = [e["delta"] for n, e in events if n == "response.custom_tool_call_input.delta"]
    assert "".join(deltas) == patch


def test_the_gateway_reads_the_streamed_usage() -> None:
    with MockLLM(SCRIPT[1:]) as mock:
        _, data = _post(mock.url, {"model": "m", "stream": True, "input": []})
    reader = UsageReader()
    reader.feed_stream(data)
    usage = reader.usage()
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens, usage.model) == (PROMPT_TOKENS, 5, "m")
