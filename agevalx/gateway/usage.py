"""Token usage and cost of model responses, per request and summed per attempt and role.

Usage is read from what the provider reports: OpenAI chat completions (`usage.prompt_tokens`,
`completion_tokens`, `prompt_tokens_details.cached_tokens`), OpenAI responses
(`input_tokens`, `output_tokens`, `input_tokens_details.cached_tokens`, also inside a
streamed `response.completed` event) and Anthropic messages (`input_tokens`, `output_tokens`,
`cache_read_input_tokens`, from `message_start` and `message_delta` when streamed; Anthropic's
`input_tokens` leave out the cached part, so its prompt is `input_tokens` plus
`cache_read_input_tokens` and `cache_creation_input_tokens`) and
Gemini (`usageMetadata`: `promptTokenCount`, `candidatesTokenCount` plus `thoughtsTokenCount`,
`cachedContentTokenCount`, in every chunk of a stream, the last one holding the totals; the
model is `modelVersion`, else the one the request's path names). Token counting endpoints
(`count_tokens`, `countTokens`) answer with no usage: they count as requests with no tokens
and no cost (not as a cost unknown).
The cost is the provider's own (`usage.cost`, as OpenRouter-style gateways report it) when
present, else computed from the price table shipped beside the model pins
(`agevalx/config/prices.yaml`); a model without a price has cost `"unknown"`, never 0.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field

from agevalx.config.common import StrictModel

PRICES_FILE = Path(__file__).parent.parent / "config" / "prices.yaml"
UNKNOWN: Literal["unknown"] = "unknown"


class ModelPrice(StrictModel):
    """USD per million tokens of one model."""

    input: float = Field(ge=0)
    """Uncached prompt tokens."""
    output: float = Field(ge=0)
    """Completion tokens."""
    cached_input: float | None = Field(default=None, ge=0)
    """Cached prompt tokens (the input price when not given)."""


class PriceTable(StrictModel):
    """The shipped price table."""

    format: str = Field(pattern=r"^ageval\.prices/1$")
    """Always `ageval.prices/1`."""
    models: dict[str, ModelPrice]
    """Prices by model id."""


@cache
def load_prices() -> PriceTable:
    return PriceTable.model_validate(yaml.safe_load(PRICES_FILE.read_text(encoding="utf-8")))


@dataclass
class Usage:
    """What one response reported."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost: float | None = None
    """The provider's reported cost in USD, if it reported one."""
    model: str | None = None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


GEMINI_MODEL_PATH = re.compile(r"/models/([^/:]+):[A-Za-z]+$")
"""A Gemini model action's path, which names the model: `/v1beta/models/<model>:<action>`."""


def path_model(path: str) -> str | None:
    """The model a Gemini request's path names, if it is one."""
    found = GEMINI_MODEL_PATH.search(path)
    return found[1] if found else None


def _gemini_fields(metadata: dict[str, Any]) -> dict[str, Any]:
    """`usageMetadata` in the OpenAI names the reader sums (thoughts are output tokens)."""
    fields: dict[str, Any] = {}
    prompt = _int(metadata.get("promptTokenCount"))
    if prompt is not None:
        fields["prompt_tokens"] = prompt
    candidates = _int(metadata.get("candidatesTokenCount"))
    thoughts = _int(metadata.get("thoughtsTokenCount"))
    if candidates is not None or thoughts is not None:
        fields["completion_tokens"] = (candidates or 0) + (thoughts or 0)
    cached = _int(metadata.get("cachedContentTokenCount"))
    if cached is not None:
        fields["cache_read_input_tokens"] = cached
    if "cost" in metadata:
        fields["cost"] = metadata["cost"]
    return fields


def _usage_fields(event: Any) -> dict[str, Any] | None:
    if not isinstance(event, dict):
        return None
    for holder in (event, event.get("response"), event.get("message")):
        if isinstance(holder, dict) and isinstance(holder.get("usage"), dict):
            return dict(holder["usage"])
    if isinstance(event.get("usageMetadata"), dict):
        return _gemini_fields(event["usageMetadata"])
    return None


def _model_of(event: Any) -> str | None:
    if not isinstance(event, dict):
        return None
    for holder in (event, event.get("response"), event.get("message")):
        if isinstance(holder, dict) and isinstance(holder.get("model"), str):
            return str(holder["model"])
    if isinstance(event.get("modelVersion"), str):
        return str(event["modelVersion"])
    return None


class UsageReader:
    """Collects the usage of one response from its JSON objects (one, or a stream's events);
    a later report of a field replaces an earlier one (streams report running totals)."""

    def __init__(self) -> None:
        self._fields: dict[str, Any] = {}
        self._model: str | None = None
        self._pending = b""
        self._received: list[bytes] = []

    def feed_json(self, value: Any) -> None:
        if isinstance(value, list):  # Gemini's stream without `alt=sse`: its chunks
            for item in value:
                self.feed_json(item)
            return
        fields = _usage_fields(value)
        if fields:
            self._fields.update({key: item for key, item in fields.items() if item is not None})
        self._model = _model_of(value) or self._model

    def feed_stream(self, data: bytes) -> None:
        """Server-sent events, in pieces as they arrive."""
        self._received.append(data)
        self._pending += data
        *lines, self._pending = self._pending.split(b"\n")
        for line in lines:
            line = line.strip()
            if line.startswith(b"data:"):
                payload = line[5:].strip()
                if self._worth_reading(payload):
                    try:
                        self.feed_json(json.loads(payload))
                    except ValueError:
                        continue

    def _worth_reading(self, payload: bytes) -> bool:
        """Whether an event may hold usage, or the model while none is known yet: the text
        deltas in between are relayed without being parsed."""
        if not payload or payload == b"[DONE]":
            return False
        if b'"usage"' in payload or b'"usageMetadata"' in payload:
            return True
        return self._model is None and (b'"model"' in payload or b'"modelVersion"' in payload)

    @property
    def stream_bytes(self) -> bytes:
        """The stream as received (kept for the traffic record)."""
        return b"".join(self._received)

    def usage(self) -> Usage | None:
        fields = self._fields
        if not fields:
            return None
        prompt = _int(fields.get("prompt_tokens", fields.get("input_tokens"))) or 0
        completion = _int(fields.get("completion_tokens", fields.get("output_tokens"))) or 0
        details = fields.get("prompt_tokens_details") or fields.get("input_tokens_details") or {}
        cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else None
        if cached is None:
            cached = _int(fields.get("cache_read_input_tokens"))
            if "prompt_tokens" not in fields:
                # Anthropic: `input_tokens` are only the tokens after the last cache
                # breakpoint; the prompt is those plus those read from and written to the cache.
                prompt += (cached or 0) + (_int(fields.get("cache_creation_input_tokens")) or 0)
        cost = fields.get("cost")
        reported = float(cost) if isinstance(cost, int | float) and cost >= 0 else None
        return Usage(prompt, completion, cached or 0, reported, self._model)


TOKEN_COUNTING = ("/count_tokens", ":countTokens")
"""Path endings of the providers' token counting endpoints (Anthropic's, Gemini's)."""


def is_token_count(path: str) -> bool:
    """Whether `path` counts tokens rather than asking the model (Claude Code calls
    `/v1/messages/count_tokens` for its tools at the start of each session)."""
    return path.rstrip("/").endswith(TOKEN_COUNTING)


def priced_cost(usage: Usage, model: str | None) -> float | None:
    """The cost of `usage` from the price table; None when the model has no price."""
    if usage.cost is not None:
        return usage.cost
    price = load_prices().models.get(model or "") if model else None
    if price is None:
        return None
    cached = min(usage.cached_tokens, usage.prompt_tokens)
    cached_price = price.input if price.cached_input is None else price.cached_input
    dollars = (
        (usage.prompt_tokens - cached) * price.input
        + cached * cached_price
        + usage.completion_tokens * price.output
    )
    return dollars / 1_000_000


@dataclass
class RouteStats:
    """Per attempt and role: what went through the gateway."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost: float = 0.0
    cost_unknown: bool = False
    retries: int = 0
    wait_seconds: float = 0.0
    failure: str | None = None
    """The code of an upstream failure the agent got (`model_upstream_unavailable`...)."""
    failure_message: str = ""
    waiting: int = 0
    """Requests held right now, waiting for a failing upstream."""
    reused: int = 0
    """Requests answered from recorded traffic instead of the upstream (a resumed attempt's
    cut-short invocation, a model-traffic replay): counted in the usage, not paid again."""

    def add(self, usage: Usage | None, model: str | None) -> None:
        self.requests += 1
        if usage is None:
            self.cost_unknown = True
            return
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.cached_tokens += usage.cached_tokens
        cost = priced_cost(usage, usage.model or model)
        if cost is None:
            self.cost_unknown = True
        else:
            self.cost += cost

    def summary(self) -> dict[str, Any]:
        """The figures written to result.json (`cost_usd` is `"unknown"` when any request's
        cost is unknown)."""
        return {
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
            "cost_usd": UNKNOWN if self.cost_unknown else round(self.cost, 8),
            "retries": self.retries,
            "wait_seconds": round(self.wait_seconds, 3),
            "reused": self.reused,
        }
