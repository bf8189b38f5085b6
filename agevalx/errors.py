"""The exception tree: every user-facing failure is an `AgevalError` with a stable code.

The CLI renders these in one or two lines (or as a JSON object with `--json`); a traceback
reaching the user is a bug.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class AgevalError(Exception):
    """Root of every error ageval reports to a user.

    `code` is stable (scripts match on it), `file` and `field` locate the fault, `hint`
    says what to do about it.
    """

    exit_code = 1

    def __init__(
        self,
        code: str,
        message: str,
        *,
        file: str | None = None,
        field: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.file = file
        self.field = field
        self.hint = hint

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "file": self.file,
            "field": self.field,
            "message": self.message,
            "hint": self.hint,
        }

    def __str__(self) -> str:
        where = ":".join(part for part in (self.file, self.field) if part)
        return f"{self.code}: {where + ': ' if where else ''}{self.message}"


class ConfigError(AgevalError):
    """A dataset, task or profiles file breaks a rule; `ageval lock` fails with it."""


class UsageError(AgevalError):
    """The command line itself is wrong (conflicting or missing flags)."""

    exit_code = 2


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
