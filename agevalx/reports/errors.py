"""Errors of `ageval report`: each has a stable code, the file at fault and a hint."""

from __future__ import annotations

from agevalx.errors import AgevalError


class ReportError(AgevalError):
    """A report cannot be made from the given source (no results, unreadable or stale files)."""
