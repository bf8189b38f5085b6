"""`ageval lock`: plan the lock nodes, compute the missing ones, write the lock files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agevalx.cache.location import default_cache_dir
from agevalx.cache.store import CacheStore
from agevalx.formats.base import FormatOptions
from agevalx.graph.execute import execute
from agevalx.graph.journal import record
from agevalx.graph.plan import LOCK_KIND
from agevalx.lockfile.models import TaskLock, parse_lock
from agevalx.lockfile.node import write_lock_view
from agevalx.lockfile.request import BindingRequest
from agevalx.operations.planning import PlanRequest, plan


@dataclass(frozen=True)
class LockOutcome:
    """One task's lock: the document, where its view was written, and whether it was reused."""

    lock: TaskLock
    path: Path
    reused: bool


def lock(
    dataset_path: Path,
    *,
    store: CacheStore | None = None,
    tasks: list[str] | None = None,
    request: BindingRequest | None = None,
    harbor: FormatOptions | None = None,
) -> list[LockOutcome]:
    """Validate the dataset and lock the named tasks (all when none is named).

    Raises `ConfigError` (exit 1) or `UsageError` (exit 2) with a stable code on the first
    failure; no lock file is written unless every task locks.
    """
    request = request or BindingRequest()
    store = store or CacheStore(default_cache_dir())
    planned = plan(
        PlanRequest(
            dataset=dataset_path,
            tasks=tuple(tasks or ()),
            binding=request,
            kinds=frozenset({LOCK_KIND}),
            harbor=harbor,
        ),
        store,
    )
    report = execute(planned, store)
    for item in report.nodes:
        if item.error is not None:
            raise item.error
    outcomes = []
    for item in report.nodes:
        record(planned.dataset.root, item.node)
        outcomes.append(
            LockOutcome(
                lock=parse_lock(item.node.payload["lock"]),
                path=write_lock_view(planned.dataset.root, item.node),
                reused=item.outcome == "reused",
            )
        )
    return outcomes
