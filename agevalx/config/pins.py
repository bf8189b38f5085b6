"""The model pins table shipped with the package (reasoning-effort levels per model)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import yaml
from pydantic import Field

from agevalx.config.common import StrictModel
from agevalx.errors import ConfigError

PINS_FILE = Path(__file__).with_name("pins.yaml")


class ModelPin(StrictModel):
    """One model's row."""

    efforts: list[str] | None = None
    """Accepted reasoning-effort levels, lowest to highest."""


class PinsTable(StrictModel):
    """The whole table."""

    format: str = Field(pattern=r"^ageval\.pins/1$")
    """Always `ageval.pins/1`."""

    models: dict[str, ModelPin]
    """Rows by model id."""


@cache
def load_pins() -> PinsTable:
    return PinsTable.model_validate(yaml.safe_load(PINS_FILE.read_text(encoding="utf-8")))


def highest_effort(model_id: str | None, *, file: str, field: str) -> str:
    """The highest effort in the model's pin; `reasoning.effort: max` is rewritten to it."""
    pins = load_pins()
    row = pins.models.get(model_id) if model_id else None
    if row is None:
        raise ConfigError(
            "model_pin_missing",
            f"reasoning.effort: max needs a pin for model {model_id!r}, and there is none",
            file=file,
            field=field,
            hint="name an explicit effort, or use a model listed in agevalx/config/pins.yaml",
        )
    if not row.efforts:
        raise ConfigError(
            "model_pin_no_efforts",
            f"the pin of model {model_id!r} lists no reasoning efforts",
            file=file,
            field=field,
            hint="this model has no effort levels; remove reasoning.effort",
        )
    return row.efforts[-1]


def check_effort(model_id: str | None, effort: str, *, file: str, field: str) -> None:
    """A named effort must be one of the model's pin (a model without a pin is not checked)."""
    row = load_pins().models.get(model_id) if model_id else None
    if row is None:
        return
    if not row.efforts:
        raise ConfigError(
            "model_pin_no_efforts",
            f"the pin of model {model_id!r} lists no reasoning efforts, so {effort!r} cannot apply",
            file=file,
            field=field,
            hint="this model has no effort levels; remove reasoning.effort",
        )
    if effort not in row.efforts:
        raise ConfigError(
            "reasoning_effort_unknown",
            f"model {model_id!r} has no reasoning effort {effort!r}",
            file=file,
            field=field,
            hint=f"use one of: {', '.join(row.efforts)} (or max, the highest)",
        )
