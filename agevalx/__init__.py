"""ageval: run AI agents on evaluation tasks in Docker, score them, and never pay twice.

The public API for scripts and task authors; everything else is internal.
"""

from agevalx.errors import AgevalError, ConfigError, UsageError
from agevalx.lockfile import BindingRequest, TaskLock
from agevalx.operations.lock import LockOutcome, lock

__all__ = [
    "AgevalError",
    "BindingRequest",
    "ConfigError",
    "LockOutcome",
    "TaskLock",
    "UsageError",
    "lock",
]
