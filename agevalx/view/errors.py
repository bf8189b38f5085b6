"""Errors of `ageval view`: each has a stable code, the file at fault and a hint."""

from __future__ import annotations

from agevalx.errors import AgevalError


class ViewError(AgevalError):
    """The viewer cannot show the given source, or cannot write the bundle."""
