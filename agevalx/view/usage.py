"""Tokens and cost of an attempt, once results record them (`usage`, `cost`): None until then."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

TOTAL_KEYS = ("total_tokens", "totalTokens")
PART_KEYS = (("input_tokens", "inputTokens"), ("output_tokens", "outputTokens"))


def tokens_of(usage: Any) -> int | None:
    """Total tokens of a usage record: an integer, or a mapping with a total or its parts."""
    if isinstance(usage, bool):
        return None
    if isinstance(usage, int):
        return usage
    if not isinstance(usage, Mapping):
        return None
    for key in TOTAL_KEYS:
        if isinstance(usage.get(key), int):
            return int(usage[key])
    parts = [_first_int(usage, keys) for keys in PART_KEYS]
    known = [part for part in parts if part is not None]
    return sum(known) if known else None


def cost_of(cost: Any) -> float | None:
    """A cost: a number, or a mapping with an `amount` (ACP's `Cost`)."""
    if isinstance(cost, Mapping):
        cost = cost.get("amount")
    if isinstance(cost, bool) or not isinstance(cost, int | float):
        return None
    return float(cost)


def total(values: Iterable[float | None]) -> float | None:
    """The sum of the known values; None when none is known."""
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def _first_int(usage: Mapping[str, Any], keys: tuple[str, ...]) -> int | None:
    for key in keys:
        if isinstance(usage.get(key), int) and not isinstance(usage.get(key), bool):
            return int(usage[key])
    return None
