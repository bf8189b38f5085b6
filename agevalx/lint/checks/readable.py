"""Whether the format's own reader accepts the task."""

from __future__ import annotations

from collections.abc import Iterator

from agevalx.errors import AgevalError
from agevalx.lint.rule import Hit
from agevalx.lint.source import LintTask, harbor

_COVERED_ELSEWHERE = frozenset({"secret_in_config", "task_id_mismatch"})


def _covered(task: LintTask, error: AgevalError) -> bool:
    """A reader's error another rule reports with its own code and line."""
    field = error.field or ""
    return (
        error.code in _COVERED_ELSEWHERE
        or field.startswith("limits.")
        or field.endswith("timeout_sec")
        or (task.format == "harbor" and harbor().reported_elsewhere(error))
    )


def task_unreadable(task: LintTask) -> Iterator[Hit]:
    try:
        task.load()
    except AgevalError as error:
        if _covered(task, error):
            return
        where = f" ({error.field})" if error.field else ""
        yield Hit(
            task.config_name,
            None,
            f"[{error.code}]{where} {error.message}",
            error.hint or "fix the task so the format's reader accepts it",
        )
