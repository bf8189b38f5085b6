"""Anthropic messages: `POST .../v1/messages` (streamed when `stream: true`) and
`POST .../v1/messages/count_tokens`.

A scripted reply becomes one assistant message: its text as a `text` block, each tool call as
a `tool_use` block (`input` = the call's arguments), `stop_reason` `tool_use` or `end_turn`.
Streamed, it is Anthropic's event sequence: `message_start`, per block `content_block_start`,
`content_block_delta` (`text_delta` word by word, `input_json_delta` in pieces) and
`content_block_stop`, then `message_delta` (stop reason and output tokens) and
`message_stop`. Usage is the mock's (`usage_of`) in Anthropic's fields.

Side requests do not consume the script. Claude Code may make requests of its own besides
the agent's turns (a one-token quota probe, a title or topic for the session), all sent
without `tools`; with `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC` (as ageval starts it) it
makes none but `count_tokens`. A messages request without `tools` is answered with
`SIDE_TEXT` and leaves the scripted replies to the agent's turns, which always carry their
tools. Token counting (`count_tokens`, which Claude Code calls for its MCP tools at the start
of a session) is never a turn either: it answers `input_tokens` = the mock's prompt tokens.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

from agevalx.agents.mockllm import (
    ARGUMENT_PIECE,
    PROMPT_TOKENS,
    ApiRoute,
    MockRequest,
    MockResponse,
    Reply,
    ToolCall,
    usage_of,
)

SIDE_TEXT = "Mock"
"""The answer to a side request (one without `tools`): short enough for a title."""


def is_turn(body: Any) -> bool:
    """Whether a messages request is an agent turn (it offers tools), not a side request."""
    return isinstance(body, Mapping) and bool(body.get("tools"))


def _message_id(body: Any) -> str:
    """A message id that differs between turns yet is the same when a turn is replayed
    (Claude Code joins content blocks that share a message id into one message)."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "msg_mock_" + hashlib.sha256(canonical.encode()).hexdigest()[:24]


def _tool_use_id(call: ToolCall) -> str:
    return call.id if call.id.startswith("toolu_") else f"toolu_{call.id}"


def _stop_reason(reply: Reply) -> str:
    return "tool_use" if reply.tool_calls else "end_turn"


def usage(reply: Reply, cost: float | None = None) -> dict[str, Any]:
    """The mock's usage of `reply` in Anthropic's fields."""
    counted = usage_of(reply, cost)
    fields: dict[str, Any] = {
        "input_tokens": counted["prompt_tokens"],
        "output_tokens": counted["completion_tokens"],
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    if "cost" in counted:
        fields["cost"] = counted["cost"]
    return fields


def _blocks(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text or not reply.tool_calls:
        blocks.append({"type": "text", "text": reply.text})
    for call in reply.tool_calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": _tool_use_id(call),
                "name": call.name,
                "input": dict(call.arguments),
            }
        )
    return blocks


def message(reply: Reply, model: str, message_id: str, cost: float | None = None) -> dict[str, Any]:
    """The non-streamed message object answering with `reply`."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _blocks(reply),
        "stop_reason": _stop_reason(reply),
        "stop_sequence": None,
        "usage": usage(reply, cost),
    }


def message_events(
    reply: Reply, model: str, message_id: str, cost: float | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The server-sent events (name, data) of `reply` streamed."""
    counted = usage(reply, cost)
    start = {**message(reply, model, message_id, cost), "content": [], "stop_reason": None}
    start["usage"] = {**counted, "output_tokens": 1}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(_blocks(reply)):
        head: dict[str, Any]
        if block["type"] == "text":
            head = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in _words(block["text"])]
        else:
            head = {**block, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": piece}
                for piece in _pieces(json.dumps(block["input"]))
            ]
        yield (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": head,
            },
        )
        for delta in deltas:
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": delta,
                },
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": _stop_reason(reply), "stop_sequence": None},
            "usage": {key: value for key, value in counted.items() if key != "input_tokens"},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _words(text: str) -> list[str]:
    words = text.split(" ") if text else []
    return [word if position == 0 else " " + word for position, word in enumerate(words)]


def _pieces(text: str) -> list[str]:
    return [text[start : start + ARGUMENT_PIECE] for start in range(0, len(text), ARGUMENT_PIECE)]


def _answer(reply: Reply, request: MockRequest) -> MockResponse:
    message_id = _message_id(request.body)
    if not request.body.get("stream"):
        return MockResponse(json=message(reply, request.model, message_id, request.cost))
    events = list(message_events(reply, request.model, message_id, request.cost))
    return MockResponse(events=events, stream=True)


def _messages(request: MockRequest) -> MockResponse:
    """A turn gets its scripted reply; a side request (no reply given) a fixed text."""
    if request.reply is None:
        return _answer(Reply(text=SIDE_TEXT), request)
    return _answer(request.reply, request)


def _count_tokens(request: MockRequest) -> MockResponse:
    return MockResponse(json={"input_tokens": PROMPT_TOKENS})


def _is_messages(path: str) -> bool:
    return path.rstrip("/").endswith("/v1/messages")


ROUTES = (
    ApiRoute(
        name="anthropic-count-tokens",
        method="POST",
        matches=lambda path: path.rstrip("/").endswith("/v1/messages/count_tokens"),
        scripted=False,
        respond=_count_tokens,
    ),
    ApiRoute(
        name="anthropic-messages",
        method="POST",
        matches=_is_messages,
        scripted=True,
        respond=_messages,
        turn=is_turn,
    ),
)
