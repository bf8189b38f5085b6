"""The lock file: a task's validated, fully resolved configuration and every file's digest.

`TaskLock` (a pydantic model) is imported on first use, so a command that only builds a
`BindingRequest` does not load the lock's models.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agevalx.lockfile.request import BindingRequest

if TYPE_CHECKING:
    from agevalx.lockfile.models import TaskLock

__all__ = ["BindingRequest", "TaskLock"]


def __getattr__(name: str) -> Any:
    if name == "TaskLock":
        from agevalx.lockfile.models import TaskLock

        return TaskLock
    raise AttributeError(f"module 'agevalx.lockfile' has no attribute {name!r}")
