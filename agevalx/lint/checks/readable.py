"""Whether the format's own reader accepts the task."""

from __future__ import annotations

from collections.abc import Iterator

from agevalx.errors import AgevalError
from agevalx.formats.harbor import errors as harbor_errors
from agevalx.formats.harbor.taskdir import INSTRUCTION
from agevalx.lint.rule import Hit
from agevalx.lint.source import LintTask

_COVERED_ELSEWHERE = frozenset({"secret_in_config", "task_id_mismatch", harbor_errors.NO_IMAGE})


def _covered(error: AgevalError) -> bool:
    """A reader's error another rule reports with its own code and line."""
    field = error.field or ""
    return (
        error.code in _COVERED_ELSEWHERE
        or field.startswith("limits.")
        or field.endswith("timeout_sec")
        or (error.code == harbor_errors.NOT_A_TASK and INSTRUCTION in error.message)
    )


def task_unreadable(task: LintTask) -> Iterator[Hit]:
    try:
        task.load()
    except AgevalError as error:
        if _covered(error):
            return
        where = f" ({error.field})" if error.field else ""
        yield Hit(
            task.config_name,
            None,
            f"[{error.code}]{where} {error.message}",
            error.hint or "fix the task so the format's reader accepts it",
        )
