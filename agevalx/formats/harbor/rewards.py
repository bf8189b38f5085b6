"""Parsing /logs/verifier/reward.json and reward.txt exactly as Harbor's `Verifier` does."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from typing import Any

Rewards = dict[str, float | int]
_LARGEST_FLOAT = int(sys.float_info.max)
"""An int reward beyond it overflows when it is scored (Harbor's `float(...)` raises)."""


class InvalidReward(Exception):
    """The reward file exists but holds no valid reward (Harbor: empty or parse error)."""


def _text(data: bytes, name: str) -> str:
    if not data:
        raise InvalidReward(f"{name} is empty")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidReward(f"{name} is not UTF-8 text") from None


def parse_reward_text(data: bytes) -> Rewards:
    """`float(text)` (Python's float syntax, surrounding whitespace allowed), finite."""
    text = _text(data, "reward.txt")
    try:
        value = float(text)
    except ValueError:
        raise InvalidReward(f"reward.txt is not a number: {text[:80]!r}") from None
    if not math.isfinite(value):
        raise InvalidReward(f"reward.txt holds a non-finite reward {value!r}")
    return {"reward": value}


def _number(source: str, key: str, value: object) -> float | int:
    # bool is an int to Harbor's check, and its result model turns it into a float.
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int):
        if abs(value) > _LARGEST_FLOAT:
            raise InvalidReward(f"{source}: {key} is too large for a number (over 1.8e308)")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidReward(f"{source}: {key} is non-finite ({value!r})")
        return value
    raise InvalidReward(f"{source}: {key} is not a number ({value!r})")


def finite_rewards(rewards: Mapping[Any, object], source: str) -> Rewards:
    """Every value a finite number (a bool counts as 0.0/1.0), keys as text; `source` names
    where the rewards came from in the error."""
    return {str(key): _number(source, str(key), value) for key, value in rewards.items()}


def parse_reward_json(data: bytes) -> Rewards:
    """A JSON object whose every value is a finite number (NaN, Infinity, 1e309 refused).

    Anything but an object is refused: Harbor's result model accepts only a mapping.
    """
    text = _text(data, "reward.json")
    try:
        document = json.loads(text)
    except ValueError:
        raise InvalidReward("reward.json is not valid JSON") from None
    if not isinstance(document, dict):
        raise InvalidReward(f"reward.json is not an object: {text[:80]!r}")
    return finite_rewards(document, "reward.json")
