"""Model usage in results: per role of an attempt, summed over attempts and jobs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict

UNKNOWN: Literal["unknown"] = "unknown"
Cost = float | Literal["unknown"]


class ModelUsage(BaseModel):
    """Model traffic through the gateway: one role of one attempt, or a sum of them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requests: int = 0
    """Model requests relayed."""
    prompt_tokens: int = 0
    """Prompt (input) tokens, cached ones included, as the provider reported them."""
    completion_tokens: int = 0
    """Completion (output) tokens."""
    cached_tokens: int = 0
    """Prompt tokens the provider served from its cache."""
    cost_usd: Cost = 0.0
    """The provider's reported cost, else priced from `prices.yaml`; `"unknown"` when any
    request's cost is unknown (a model without a price), never 0 for it."""
    retries: int = 0
    """Upstream retries after connect errors, timeouts, 5xx and 429."""
    wait_seconds: float = 0.0
    """Seconds requests were held waiting for a failing upstream."""
    reused: int = 0
    """Of `requests`, those a resumed attempt had answered from its own cut-short traffic
    (answers an earlier process of the attempt already paid for), not sent again."""


def total_usage(usages: Iterable[ModelUsage]) -> ModelUsage | None:
    """The sum of `usages`, or None when there are none."""
    items = list(usages)
    if not items:
        return None
    costs = [usage.cost_usd for usage in items]
    known = [cost for cost in costs if not isinstance(cost, str)]
    return ModelUsage(
        requests=sum(usage.requests for usage in items),
        prompt_tokens=sum(usage.prompt_tokens for usage in items),
        completion_tokens=sum(usage.completion_tokens for usage in items),
        cached_tokens=sum(usage.cached_tokens for usage in items),
        cost_usd=UNKNOWN if len(known) < len(costs) else round(sum(known), 8),
        retries=sum(usage.retries for usage in items),
        wait_seconds=round(sum(usage.wait_seconds for usage in items), 3),
        reused=sum(usage.reused for usage in items),
    )


def cost_per_pass(total: ModelUsage | None, passed: int) -> Cost | None:
    """Total cost over PASS attempts; None without usage or without a pass."""
    if total is None or passed == 0:
        return None
    if isinstance(total.cost_usd, str):
        return UNKNOWN
    return round(total.cost_usd / passed, 8)
