"""Locking a whole dataset or one task and writing the lock files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agevalx.dataset.loader import load_dataset
from agevalx.fsutil import atomic_write
from agevalx.hashing import canonical_json
from agevalx.lock.binding import BindingRequest
from agevalx.lock.models import TaskLock
from agevalx.lock.resolve import resolve_task_lock

LOCK_DIR = ".ageval/locks"


@dataclass(frozen=True)
class LockOutcome:
    """One written lock."""

    lock: TaskLock
    path: Path


def lock_path(dataset_root: Path, task_id: str) -> Path:
    return dataset_root / LOCK_DIR / f"{task_id}.lock.json"


def lock(
    dataset_path: Path,
    *,
    tasks: list[str] | None = None,
    request: BindingRequest | None = None,
    write: bool = True,
) -> list[LockOutcome]:
    """Validate the dataset and lock the named tasks (all when none is named).

    Raises `ConfigError` (exit 1) or `UsageError` (exit 2) with a stable code on the first
    failure; nothing is written unless every task locks.
    """
    request = request or BindingRequest()
    request.check()
    dataset = load_dataset(dataset_path)
    chosen = tasks or list(dataset.task_ids)
    locks = [resolve_task_lock(dataset, dataset.load_task(task_id), request) for task_id in chosen]
    outcomes = [
        LockOutcome(lock=item, path=lock_path(dataset.root, item.task_id)) for item in locks
    ]
    if write:
        for outcome in outcomes:
            atomic_write(outcome.path, canonical_json(outcome.lock.document()) + b"\n")
    return outcomes
