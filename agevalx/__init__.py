"""ageval: run AI agents on evaluation tasks in Docker, score them, and never pay twice.

The public API for scripts and task authors; everything else is internal:

- the verbs `lock`, `run`, `replay`, `report` (what the commands of the same names do);
- `RunContext`, what a task's run.py gets as `ctx`;
- the models users hold: `TaskLock` (a lock file), `AttemptResult` (result.json),
  `JobSummary` (summary.json), `BindingRequest` (how agents are bound);
- `AgevalError` and its subclasses, each with a stable `code`.

Heavy modules are imported on first use, so `import agevalx` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agevalx.errors import AgevalError, ConfigError, UsageError
from agevalx.lazy import lazy_names

if TYPE_CHECKING:
    from agevalx.api import replay, report, run
    from agevalx.lockfile import BindingRequest, TaskLock
    from agevalx.operations.lock import LockOutcome, lock
    from agevalx.results.models import AttemptResult, JobSummary
    from agevalx.runner.context import RunContext

_LAZY = {
    "AttemptResult": "agevalx.results.models",
    "BindingRequest": "agevalx.lockfile",
    "JobSummary": "agevalx.results.models",
    "LockOutcome": "agevalx.operations.lock",
    "RunContext": "agevalx.runner.context",
    "TaskLock": "agevalx.lockfile",
    "lock": "agevalx.operations.lock",
    "replay": "agevalx.api",
    "report": "agevalx.api",
    "run": "agevalx.api",
}

__all__ = [
    "AgevalError",
    "AttemptResult",
    "BindingRequest",
    "ConfigError",
    "JobSummary",
    "LockOutcome",
    "RunContext",
    "TaskLock",
    "UsageError",
    "lock",
    "replay",
    "report",
    "run",
]


__getattr__ = lazy_names(__name__, _LAZY)
