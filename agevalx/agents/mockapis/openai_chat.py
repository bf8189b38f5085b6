"""OpenAI chat completions: `POST .../chat/completions`, streamed when `stream: true`."""

from __future__ import annotations

from agevalx.agents.mockllm import (
    ApiRoute,
    MockRequest,
    MockResponse,
    Reply,
    completion,
    stream_chunks,
)


def _completions(request: MockRequest) -> MockResponse:
    reply = request.reply or Reply()
    body = request.body
    if not body.get("stream"):
        return MockResponse(json=completion(reply, request.model, cost=request.cost))
    options = body.get("stream_options") or {}
    usage = isinstance(options, dict) and bool(options.get("include_usage"))
    chunks = stream_chunks(reply, request.model, include_usage=usage, cost=request.cost)
    return MockResponse(events=[(None, chunk) for chunk in chunks], stream=True, done=True)


ROUTES = (
    ApiRoute(
        name="openai-chat",
        method="POST",
        matches=lambda path: path.rstrip("/").endswith("/chat/completions"),
        scripted=True,
        respond=_completions,
    ),
)
