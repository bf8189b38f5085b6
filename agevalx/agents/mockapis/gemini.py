"""The Gemini API: `POST .../models/<model>:generateContent`, `:streamGenerateContent` and
`:countTokens`.

A scripted turn is one `GenerateContentResponse`: the reply's text as a `text` part, each
tool call as a `functionCall` part (with the script's call id as its `id`, so that an agent
echoing it back sends the same bytes on every run), and the usage in `usageMetadata`.
`streamGenerateContent?alt=sse` sends the response as server-sent events (the text a word at
a time, the calls whole, the finish reason and the usage in the last chunk);
without `alt=sse` it is the same chunks as one JSON array, as the API does. `countTokens`
is not a model turn: it answers a count without consuming the script.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from agevalx.agents.mockllm import (
    PROMPT_TOKENS,
    ApiRoute,
    MockRequest,
    MockResponse,
    Reply,
    usage_of,
)

ACTION = re.compile(r"/models/(?P<model>[^/:]+):(?P<action>[A-Za-z]+)$")
"""A model action's path: `/v1beta/models/gemini-2.5-flash:generateContent`."""

RESPONSE_ID = "mock-response"
FINISH = "STOP"
"""Gemini's finish reason for a turn that ends normally, with or without function calls."""


def _action(path: str) -> tuple[str, str] | None:
    found = ACTION.search(path.rstrip("/"))
    return (found["model"], found["action"]) if found else None


def _serves(action: str) -> Callable[[str], bool]:
    def matches(path: str) -> bool:
        found = _action(path)
        return found is not None and found[1] == action

    return matches


def model_of(request: MockRequest) -> str:
    """The model named by the path (Gemini puts it there, not in the body)."""
    found = _action(request.path)
    return found[0] if found else request.model


def usage_metadata(reply: Reply, cost: float | None = None) -> dict[str, Any]:
    """`usage_of(reply)` in Gemini's terms; `cost` is the mock's addition (the API reports
    none), read by the gateway as a provider-reported cost."""
    usage = usage_of(reply, cost)
    metadata: dict[str, Any] = {
        "promptTokenCount": usage["prompt_tokens"],
        "candidatesTokenCount": usage["completion_tokens"],
        "cachedContentTokenCount": 0,
        "totalTokenCount": usage["total_tokens"],
    }
    if cost is not None:
        metadata["cost"] = cost
    return metadata


def _calls(reply: Reply) -> list[dict[str, Any]]:
    return [
        {"functionCall": {"id": call.id, "name": call.name, "args": dict(call.arguments)}}
        for call in reply.tool_calls
    ]


def _chunk(parts: list[dict[str, Any]], model: str, *, finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": model, "responseId": RESPONSE_ID}


def response(reply: Reply, model: str, cost: float | None = None) -> dict[str, Any]:
    """The whole `GenerateContentResponse` of `reply`."""
    parts = ([{"text": reply.text}] if reply.text else []) + _calls(reply)
    whole = _chunk(parts, model, finish=FINISH)
    whole["usageMetadata"] = usage_metadata(reply, cost)
    return whole


def stream_chunks(reply: Reply, model: str, cost: float | None = None) -> list[dict[str, Any]]:
    """The chunks of a streamed `reply`: a word of text each, then the calls, then a last
    chunk with the finish reason and the usage."""
    words = reply.text.split(" ") if reply.text else []
    chunks = [
        _chunk([{"text": word if position == 0 else " " + word}], model)
        for position, word in enumerate(words)
    ]
    if reply.tool_calls:
        chunks.append(_chunk(_calls(reply), model))
    last = _chunk([{"text": ""}], model, finish=FINISH)
    last["usageMetadata"] = usage_metadata(reply, cost)
    chunks.append(last)
    return chunks


def _generate(request: MockRequest) -> MockResponse:
    reply = request.reply or Reply()
    return MockResponse(json=response(reply, model_of(request), request.cost))


def _stream(request: MockRequest) -> MockResponse:
    chunks = stream_chunks(request.reply or Reply(), model_of(request), request.cost)
    if request.query.get("alt") == ["sse"]:
        return MockResponse(events=[(None, chunk) for chunk in chunks], stream=True)
    return MockResponse(json=chunks)


def _count_tokens(request: MockRequest) -> MockResponse:
    return MockResponse(json={"totalTokens": PROMPT_TOKENS})


ROUTES = (
    ApiRoute(
        name="gemini-generate-content",
        method="POST",
        matches=_serves("generateContent"),
        scripted=True,
        respond=_generate,
    ),
    ApiRoute(
        name="gemini-stream-generate-content",
        method="POST",
        matches=_serves("streamGenerateContent"),
        scripted=True,
        respond=_stream,
    ),
    ApiRoute(
        name="gemini-count-tokens",
        method="POST",
        matches=_serves("countTokens"),
        scripted=False,
        respond=_count_tokens,
    ),
)
