"""OpenAI responses: `POST .../responses`, streamed as typed server-sent events when `stream: true`.

A reply's text becomes a `message` output item and each tool call a `function_call` item
(`call_id` is the call's id, `arguments` its JSON text). A call whose name the request
declares as a `custom` tool (codex's freeform `apply_patch` for the models it knows) becomes
a `custom_tool_call` whose `input` is the call's `input` argument, as such a tool takes raw
text. The stream is the sequence a provider sends: `response.created`,
`response.in_progress`, then per item `response.output_item.added`, its deltas and
`.done` events, `response.output_item.done`, and `response.completed` carrying the whole
response with its usage (`input_tokens`, `output_tokens`, as `mockllm.usage_of` counts).

Ids are numbered per server process (`resp_mock_<n>`), so a request never carries anything
random from the mock back into the agent's next request.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from typing import Any

from agevalx.agents.mockllm import (
    ARGUMENT_PIECE,
    ApiRoute,
    MockRequest,
    MockResponse,
    Reply,
    ToolCall,
    usage_of,
)

_numbers = itertools.count(1)


def responses_usage(reply: Reply, cost: float | None = None) -> dict[str, Any]:
    """The usage of `reply` in the responses API's fields."""
    counted = usage_of(reply, cost)
    usage: dict[str, Any] = {
        "input_tokens": counted["prompt_tokens"],
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": counted["completion_tokens"],
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": counted["total_tokens"],
    }
    if "cost" in counted:
        usage["cost"] = counted["cost"]
    return usage


def custom_tools(body: Any) -> frozenset[str]:
    """The names of the request's `custom` (freeform) tools."""
    tools = body.get("tools") if isinstance(body, dict) else None
    return frozenset(
        str(tool["name"])
        for tool in tools or ()
        if isinstance(tool, dict) and tool.get("type") == "custom" and "name" in tool
    )


def _message_item(text: str, item_id: str, status: str) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": []}] if text else []
    return {
        "type": "message",
        "id": item_id,
        "status": status,
        "role": "assistant",
        "content": content,
    }


def _call_item(call: ToolCall, item_id: str, custom: bool, status: str) -> dict[str, Any]:
    if custom:
        text = call.arguments.get("input", "")
        return {
            "type": "custom_tool_call",
            "id": item_id,
            "status": status,
            "call_id": call.id,
            "name": call.name,
            "input": text if isinstance(text, str) else json.dumps(text),
        }
    return {
        "type": "function_call",
        "id": item_id,
        "status": status,
        "call_id": call.id,
        "name": call.name,
        "arguments": json.dumps(call.arguments),
    }


def output_items(reply: Reply, number: int, custom: frozenset[str]) -> list[dict[str, Any]]:
    """The completed output items of `reply`."""
    items = [_message_item(reply.text, f"msg_mock_{number}", "completed")] if reply.text else []
    for index, call in enumerate(reply.tool_calls):
        item_id = f"fc_mock_{number}_{index}"
        items.append(_call_item(call, item_id, call.name in custom, "completed"))
    return items


def response_object(
    reply: Reply,
    model: str,
    number: int,
    *,
    custom: frozenset[str] = frozenset(),
    cost: float | None = None,
    status: str = "completed",
) -> dict[str, Any]:
    """A `response` object for `reply` (without output and usage while in progress)."""
    done = status == "completed"
    return {
        "id": f"resp_mock_{number}",
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": model,
        "output": output_items(reply, number, custom) if done else [],
        "usage": responses_usage(reply, cost) if done else None,
    }


def stream_events(
    reply: Reply,
    model: str,
    number: int,
    *,
    custom: frozenset[str] = frozenset(),
    cost: float | None = None,
) -> Iterator[dict[str, Any]]:
    """The events of a streamed `reply`, each with its `type` and `sequence_number`."""
    sequence = itertools.count()

    def event(kind: str, **fields: Any) -> dict[str, Any]:
        return {"type": kind, "sequence_number": next(sequence), **fields}

    started = response_object(reply, model, number, status="in_progress")
    yield event("response.created", response=started)
    yield event("response.in_progress", response=started)
    for index, item in enumerate(output_items(reply, number, custom)):
        yield event("response.output_item.added", output_index=index, item=_opened(item))
        yield from _item_deltas(item, index, event)
        yield event("response.output_item.done", output_index=index, item=item)
    finished = response_object(reply, model, number, custom=custom, cost=cost)
    yield event("response.completed", response=finished)


def _opened(item: dict[str, Any]) -> dict[str, Any]:
    """An item as `output_item.added` announces it: in progress, its content still empty."""
    empty = {"message": ("content", []), "function_call": ("arguments", "")}
    field, value = empty.get(item["type"], ("input", ""))
    return {**item, "status": "in_progress", field: value}


def _item_deltas(item: dict[str, Any], index: int, event: Any) -> Iterator[dict[str, Any]]:
    where = {"item_id": item["id"], "output_index": index}
    if item["type"] == "message":
        part = {"type": "output_text", "text": "", "annotations": []}
        text = item["content"][0]["text"]
        yield event("response.content_part.added", **where, content_index=0, part=part)
        for position, word in enumerate(text.split(" ")):
            delta = word if position == 0 else " " + word
            yield event("response.output_text.delta", **where, content_index=0, delta=delta)
        yield event("response.output_text.done", **where, content_index=0, text=text)
        done_part = {**part, "text": text}
        yield event("response.content_part.done", **where, content_index=0, part=done_part)
    elif item["type"] == "function_call":
        arguments = item["arguments"]
        for start in range(0, len(arguments), ARGUMENT_PIECE):
            piece = arguments[start : start + ARGUMENT_PIECE]
            yield event("response.function_call_arguments.delta", **where, delta=piece)
        yield event("response.function_call_arguments.done", **where, arguments=arguments)
    else:
        yield event("response.custom_tool_call_input.delta", **where, delta=item["input"])
        yield event("response.custom_tool_call_input.done", **where, input=item["input"])


def _responses(request: MockRequest) -> MockResponse:
    reply = request.reply or Reply()
    number = next(_numbers)
    custom = custom_tools(request.body)
    if not request.body.get("stream"):
        body = response_object(reply, request.model, number, custom=custom, cost=request.cost)
        return MockResponse(json=body)
    events = stream_events(reply, request.model, number, custom=custom, cost=request.cost)
    return MockResponse(events=[(event["type"], event) for event in events], stream=True)


ROUTES = (
    ApiRoute(
        name="openai-responses",
        method="POST",
        matches=lambda path: path.rstrip("/").endswith("/v1/responses"),
        scripted=True,
        respond=_responses,
    ),
)
