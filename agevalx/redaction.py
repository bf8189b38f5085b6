"""Masking secret values wherever ageval records text: journals, transcripts, evaluations."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"
"""What a secret value is replaced with."""

MIN_SECRET_LENGTH = 6
"""Shorter values (`1`, `true`...) are settings, not secrets, and are left alone."""


class Redactor:
    """Replaces every secret value found in strings, however deeply nested."""

    def __init__(self, values: Iterable[str]) -> None:
        kept = {value for value in values if len(value) >= MIN_SECRET_LENGTH}
        self._values = sorted(kept, key=len, reverse=True)

    def text(self, text: str) -> str:
        """`text` with secrets masked."""
        for value in self._values:
            if value in text:
                text = text.replace(value, MASK)
        return text

    def value(self, value: Any) -> Any:
        """Any JSON-like value with secrets masked in its strings."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(item) for item in value]
        return value
