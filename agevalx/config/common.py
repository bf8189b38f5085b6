"""Shared pieces of the config models."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic_core import PydanticCustomError

MAX_SECONDS = 365 * 24 * 3600
"""The longest duration a config may give (a year): a longer one is no limit in practice, and
waits past `threading.TIMEOUT_MAX` overflow."""


class StrictModel(BaseModel):
    """Base of every config model: unknown keys are refused and values are not coerced."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def coded(code: str, message: str, hint: str | None = None) -> PydanticCustomError:
    """A validation error that `validate_model` reports with `code` instead of a generic one."""
    context: dict[str, Any] = {"hint": hint} if hint else {}
    return PydanticCustomError(code, message, context)


def relative_path(value: str, *, what: str = "path") -> str:
    """Check that `value` is a relative path that stays inside its root."""
    path = PurePosixPath(value)
    unusable = "\x00" in value or len(value) > 1024 or any(len(p) > 255 for p in path.parts)
    if not value or unusable or path.is_absolute() or ".." in path.parts or "\\" in value:
        raise coded(
            "invalid_path",
            f"the {what} {value!r} must be relative and stay inside its root",
            "use a relative path without '..'",
        )
    return path.as_posix()


def absolute_path(value: str) -> str:
    path = PurePosixPath(value)
    if not path.is_absolute() or ".." in path.parts:
        raise coded(
            "invalid_path",
            f"{value!r} must be an absolute container path without '..'",
            "write a path such as /attempt/workspace/out.json",
        )
    return path.as_posix()


def forbidden_key(code: str, key: str, hint: str) -> PydanticCustomError:
    return coded(code, f"the key {key!r} is not allowed here", hint)
