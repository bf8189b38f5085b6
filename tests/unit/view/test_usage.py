"""Tokens and cost read from whatever shape a result records them in."""

from __future__ import annotations

from typing import Any

import pytest

from agevalx.view.usage import cost_of, tokens_of, total

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("usage", "tokens"),
    [
        (1200, 1200),
        ({"total_tokens": 30, "input_tokens": 10}, 30),
        ({"totalTokens": 7}, 7),
        ({"input_tokens": 10, "output_tokens": 5}, 15),
        ({"inputTokens": 3}, 3),
        ({"used": 10}, None),
        (None, None),
        (True, None),
        ("12", None),
    ],
)
def test_tokens_of_a_usage_record(usage: Any, tokens: int | None) -> None:
    assert tokens_of(usage) == tokens


@pytest.mark.parametrize(
    ("cost", "amount"),
    [(0.25, 0.25), (2, 2.0), ({"amount": 1.5, "currency": "USD"}, 1.5), ({}, None), (None, None)],
)
def test_cost_of_a_cost_record(cost: Any, amount: float | None) -> None:
    assert cost_of(cost) == amount


def test_a_total_is_unknown_only_when_every_part_is() -> None:
    assert total([None, 2.0, None, 3.0]) == 5.0
    assert total([None, None]) is None
