"""Jobs made of the runcases dataset's tasks (tests/integration/data/runcases), under ids of
the test's choosing."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from agevalx.testing.datasets import job_of_tasks

RUNCASES = Path(__file__).parent / "data" / "runcases"


def runcases_job(target: Path, tasks: Mapping[str, str], *, salt: str | None = None) -> Path:
    """runcases' tasks under the ids of `tasks` (id: runcases task) at `target`
    (`agevalx.testing.datasets.job_of_tasks`)."""
    return job_of_tasks(RUNCASES, target, tasks, salt=salt)
