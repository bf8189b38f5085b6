"""Planning a command's graph: open the dataset in its format, choose the tasks, key the request.

Every command that plans (run, lock, graph show/explain, replay) asks through a `PlanRequest`,
so the request values rules read are named in one place (`request_values`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agevalx.cache.store import CacheStore
from agevalx.errors import UsageError
from agevalx.formats import open_dataset
from agevalx.formats.base import Dataset
from agevalx.graph.plan import GraphRequest, Plan, plan_graph
from agevalx.limits import MAX_K as MAX_K
from agevalx.limits import MAX_PLANNED_ATTEMPTS as MAX_PLANNED_ATTEMPTS
from agevalx.lockfile.request import BindingRequest, agent_key_value

if TYPE_CHECKING:
    from agevalx.formats.base import FormatOptions


@dataclass(frozen=True)
class PlanRequest:
    """What to plan: which tasks, how many attempts, and how agents are bound."""

    dataset: Path | None
    """The dataset directory; `None` for a Harbor job config that lists its own tasks."""
    tasks: tuple[str, ...] = ()
    k: int = 1
    binding: BindingRequest = field(default_factory=BindingRequest)
    sample: int = 0
    kinds: frozenset[str] | None = None
    """Plan only these kinds (and what they need); all when None."""
    attempts: tuple[int, ...] | None = None
    """Plan only these attempt indices (a resume); 0..k-1 when None."""
    fork: dict[str, str] | None = None
    """A fork's origin: the source attempt and the checkpoint key it starts from."""
    harbor: FormatOptions | None = None
    """A Harbor run's job config, `--env-params`, primary metric and strategy."""
    entries: bool = True
    """Whether the plan's hits carry their action entries (`GraphRequest.entries`)."""


def request_values(request: PlanRequest, dataset: Dataset) -> dict[str, Any]:
    """The request inputs rules may read (besides the planner's `attempt` and `tasks`)."""
    return {
        "agent": agent_key_value(request.binding.agent),
        "model": request.binding.model,
        "fork_model": request.binding.fork_model,
        "sample": request.sample,
        "k": request.k,
        "fork": request.fork,
        "format_settings": dataset.settings_digest(),
        "metric": dataset.metric(),
    }


def chosen_tasks(dataset: Dataset, tasks: tuple[str, ...]) -> tuple[str, ...]:
    """The tasks asked for (all when none), each checked to exist, in the order given."""
    if not tasks:
        return dataset.task_ids
    for task_id in tasks:
        dataset.check_task(task_id)
    return tuple(dict.fromkeys(tasks))


def check_k(k: int) -> None:
    """Refuse more than `MAX_K` attempts per task (`k_too_large`)."""
    if k > MAX_K:
        raise UsageError(
            "k_too_large",
            f"-k {k} asks for more than {MAX_K} attempts per task",
            field="-k",
            hint=f"use -k {MAX_K} or less; a larger -k later reuses the attempts already made, "
            "so a big sample can be grown in steps",
        )


def check_scale(request: PlanRequest, tasks: tuple[str, ...]) -> None:
    """Refuse a job too large to plan at once (`k_too_large`, `too_many_attempts`) before
    any work, instead of planning for minutes without a word."""
    check_k(request.k)
    attempts = len(tasks) * (len(request.attempts) if request.attempts else request.k)
    if attempts > MAX_PLANNED_ATTEMPTS:
        raise UsageError(
            "too_many_attempts",
            f"{len(tasks)} tasks x -k {request.k} are {attempts} attempts; one command plans "
            f"at most {MAX_PLANNED_ATTEMPTS}",
            field="-k",
            hint="lower -k, or run the dataset in parts with --task",
        )


def open_for(request: PlanRequest) -> Dataset:
    """The dataset `request` plans over, opened for its binding."""
    request.binding.check()
    return open_dataset(request.dataset, request.binding, request.harbor)


def plan(request: PlanRequest, store: CacheStore, dataset: Dataset | None = None) -> Plan:
    """Build the graph for `request` (over `dataset` when it is already open); raises
    ConfigError/UsageError for invalid input, and for a job too large (`check_scale`)."""
    dataset = dataset or open_for(request)
    tasks = chosen_tasks(dataset, request.tasks)
    check_scale(request, tasks)
    graph_request = GraphRequest(
        tasks=tasks,
        k=request.k,
        kinds=request.kinds,
        attempts=request.attempts,
        values=request_values(request, dataset),
        entries=request.entries,
    )
    return plan_graph(dataset, graph_request, store)
