"""`AgevalWarning`, the reported non-fatal finding (also importable from `agevalx.errors`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class AgevalWarning(BaseModel):
    """A reported, non-fatal finding: loading and running go on (a declared setting that is
    not applied, an ignored key)."""

    model_config = ConfigDict(frozen=True)

    code: str
    """Stable code, e.g. `harbor_field_unapplied`."""
    message: str
    file: str | None = None
    """The file the finding is about, when known."""
    field: str | None = None
    """Dotted path of the field, e.g. `agents[0].model_name`."""
