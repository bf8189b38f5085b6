"""A check's registration (`Rule`) and what it reports (`Hit`), with the helpers the
checks share."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from agevalx.lint.report import Severity
from agevalx.lint.source import Format, LintSource, LintTask

AGENT_DOCKERFILE = "environment/Dockerfile"
"""The agent's image (its build context is environment/), in both formats."""


@dataclass(frozen=True)
class Hit:
    """One problem a check saw; `file` is relative to the task (task checks) or to the
    dataset (dataset checks, which also name the `task`)."""

    file: str
    line: int | None
    message: str
    hint: str
    task: str | None = None


TaskCheck = Callable[[LintTask], Iterable[Hit]]
DatasetCheck = Callable[[LintSource], Iterable[Hit]]


@dataclass(frozen=True)
class Rule:
    """A registered check: its stable code, severity, what it catches and where it applies."""

    code: str
    severity: Severity
    summary: str
    formats: tuple[Format, ...]
    task_check: TaskCheck | None = None
    dataset_check: DatasetCheck | None = None


# ------------------------------------------------------------------------------


def table(document: dict[str, Any] | None, *keys: str) -> dict[str, Any]:
    """The nested mapping at `keys` ({} when any step is missing or not a mapping)."""
    current: Any = document or {}
    for key in keys:
        current = current.get(key) if isinstance(current, dict) else None
    return current if isinstance(current, dict) else {}


def number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def toml_line(text: str | None, table: str, key: str) -> int | None:
    """The line of `key = ...` inside `[table]` of a TOML text (None: not written there)."""
    if text is None:
        return None
    current = ""
    for number, line in enumerate(text.splitlines(), start=1):
        header = re.match(r"^\s*\[\s*([^\[\]]+?)\s*\]", line)
        if header:
            current = header.group(1)
        elif current == table and re.match(rf"^\s*{re.escape(key)}\s*=", line):
            return number
    return None


def dockerfiles(task: LintTask) -> list[str]:
    return [
        name
        for name in task.files
        if (base := PurePosixPath(name).name) == "Dockerfile"
        or base.endswith(".Dockerfile")
        or base.startswith("Dockerfile.")
    ]
