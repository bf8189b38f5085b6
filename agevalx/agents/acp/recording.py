"""The invocation's recorder and transcript, with secret values masked on the way in."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from agevalx.agents.base import Invocation, RecordedAction
from agevalx.redaction import Redactor

T = TypeVar("T")

PUBLIC_VARIABLES = frozenset({"AGEVAL_MODEL", "AGEVAL_BASE_URL"})
"""Invocation variables that are not secrets (both are written in the lock): left unmasked,
so a model id in the agent's output or a command is recorded as it is."""

RECORDED_TEXT_LIMIT = 64 * 1024
"""Characters of command output or file content kept in one recorded action."""


def tail(text: str, limit: int = RECORDED_TEXT_LIMIT) -> str:
    """The last `limit` characters of `text`."""
    return text[-limit:] if len(text) > limit else text


class Recorder:
    """Hands actions and transcript entries to the invocation, secrets masked.

    A failing `record` or `transcript` callback is re-raised to the caller (the agent then
    gets an internal error for its request) and kept in `failure`, so the executor can end
    the invocation with it instead of carrying on with a journal that missed a step.
    """

    def __init__(self, invocation: Invocation) -> None:
        self._invocation = invocation
        secrets = [v for k, v in invocation.environ.items() if k not in PUBLIC_VARIABLES]
        self.redactor = Redactor(secrets)
        self.failure: Exception | None = None

    def action(self, action: RecordedAction) -> None:
        """Record one step (call before answering the agent)."""
        masked = dataclasses.replace(
            action,
            command=self._optional(action.command),
            cwd=self._optional(action.cwd),
            path=self._optional(action.path),
            output=self._optional(action.output),
            detail=self.redactor.value(action.detail),
        )
        self._guarded(self._invocation.record, masked)

    def transcript(self, entry: dict[str, Any]) -> None:
        """Append one transcript entry."""
        self._guarded(self._invocation.transcript, self.redactor.value(entry))

    def _guarded(self, callback: Callable[[T], None], item: T) -> None:
        try:
            callback(item)
        except Exception as exc:
            self.failure = self.failure or exc
            raise

    def _optional(self, text: str | None) -> str | None:
        return None if text is None else self.redactor.text(text)
