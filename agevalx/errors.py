"""The exception tree: every user-facing failure is an `AgevalError` with a stable code.

The CLI renders these in one or two lines (or as a JSON object with `--json`); a traceback
reaching the user is a bug.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agevalx.warning import AgevalWarning as AgevalWarning


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


def __getattr__(name: str) -> Any:
    # AgevalWarning is a pydantic model: it lives in agevalx.warning so that importing the
    # errors (which everything does, the command line first) does not import pydantic.
    if name == "AgevalWarning":
        from agevalx.warning import AgevalWarning

        return AgevalWarning
    raise AttributeError(f"module 'agevalx.errors' has no attribute {name!r}")
