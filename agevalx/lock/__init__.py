"""`ageval lock`: validate a dataset, resolve defaults and write canonical task locks."""

from agevalx.lock.binding import BindingRequest
from agevalx.lock.models import TaskLock
from agevalx.lock.write import LockOutcome, lock

__all__ = ["BindingRequest", "LockOutcome", "TaskLock", "lock"]
