"""The lock file: a task's validated, fully resolved configuration and every file's digest."""

from agevalx.lockfile.binding import BindingRequest
from agevalx.lockfile.models import TaskLock

__all__ = ["BindingRequest", "TaskLock"]
