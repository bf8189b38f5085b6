"""ageval: run AI agents on evaluation tasks in Docker, score them, and never pay twice.

The public API for scripts and task authors; everything else is internal. Heavy modules are
imported on first use, so `import agevalx` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from agevalx.errors import AgevalError, ConfigError, UsageError

if TYPE_CHECKING:
    from agevalx.lockfile import BindingRequest, TaskLock
    from agevalx.operations.lock import LockOutcome, lock
    from agevalx.runner.context import RunContext

_LAZY = {
    "BindingRequest": "agevalx.lockfile",
    "TaskLock": "agevalx.lockfile",
    "LockOutcome": "agevalx.operations.lock",
    "lock": "agevalx.operations.lock",
    "RunContext": "agevalx.runner.context",
}

__all__ = [
    "AgevalError",
    "BindingRequest",
    "ConfigError",
    "LockOutcome",
    "RunContext",
    "TaskLock",
    "UsageError",
    "lock",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agevalx' has no attribute {name!r}")
