"""Usage sums, cost per PASS and the price table."""

from __future__ import annotations

import pytest

from agevalx.config.pins import load_pins
from agevalx.gateway.usage import RouteStats, Usage, load_prices, priced_cost
from agevalx.results.usage import ModelUsage, cost_per_pass, total_usage


@pytest.mark.unit
def test_every_priced_model_is_pinned_and_unpriced_costs_are_unknown() -> None:
    assert set(load_prices().models) <= set(load_pins().models)
    assert priced_cost(Usage(prompt_tokens=10, completion_tokens=5), "no-such-model") is None
    assert priced_cost(Usage(1, 1, cost=0.75), "no-such-model") == 0.75
    stats = RouteStats()
    stats.add(Usage(prompt_tokens=1_000_000, completion_tokens=0), "gpt-5.4-mini")
    assert stats.summary()["cost_usd"] == load_prices().models["gpt-5.4-mini"].input
    stats.add(Usage(prompt_tokens=5, completion_tokens=5), "no-such-model")
    assert stats.summary()["cost_usd"] == "unknown"
    assert stats.summary()["prompt_tokens"] == 1_000_005


@pytest.mark.unit
def test_totals_and_cost_per_pass() -> None:
    one = ModelUsage(requests=2, prompt_tokens=20, completion_tokens=11, cost_usd=0.5)
    two = ModelUsage(requests=1, prompt_tokens=10, completion_tokens=3, cost_usd=0.25, retries=2)
    total = total_usage([one, two])
    assert total is not None
    assert (total.requests, total.prompt_tokens, total.completion_tokens) == (3, 30, 14)
    assert (total.cost_usd, total.retries) == (0.75, 2)
    assert cost_per_pass(total, 3) == 0.25
    assert cost_per_pass(total, 0) is None
    unknown = total_usage([one, ModelUsage(requests=1, cost_usd="unknown")])
    assert unknown is not None and unknown.cost_usd == "unknown"
    assert cost_per_pass(unknown, 1) == "unknown"
    assert total_usage([]) is None
