"""The graph page of a job: its nodes as `ageval graph show` plans them, and for each stale
node the reason `ageval graph explain` gives.

The job's request is rebuilt from what it recorded: its tasks and k (summary.json), the
`--agent` / `--model` / `--profiles` of its lock (`overrides`, `binding.profiles_file`) and
the sample whose run keys are the job's (a later `--fresh` moved the dataset's sample on).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agevalx.cache.store import CacheStore
from agevalx.errors import AgevalError
from agevalx.formats.base import dataset_of
from agevalx.graph.explain import explain
from agevalx.graph.plan import Plan
from agevalx.lockfile import BindingRequest
from agevalx.lockfile.request import PROFILES_FILE
from agevalx.operations.planning import PlanRequest, plan
from agevalx.operations.run import SAMPLE_FILE
from agevalx.results.models import AttemptResult, JobSummary
from agevalx.view.attempt import attempt_lock

SAMPLES_TRIED = 8
"""How many samples back the job's own run keys are looked for."""


@dataclass(frozen=True)
class GraphNode:
    id: str
    kind: str
    key: str
    status: str
    """hit or miss: whether the planned key is in the cache."""
    parents: list[str]
    job_key: str | None
    """The key this job used for the node (None: the job recorded none)."""
    job_outcome: str | None
    """reused or computed (or failed, blocked) in the job."""
    explanation: dict[str, Any] | None
    """`ageval graph explain`'s report, for a miss."""


@dataclass(frozen=True)
class JobGraph:
    job_id: str
    request: str
    """The rebuilt request, as `ageval graph show` flags."""
    nodes: list[GraphNode] = field(default_factory=list)
    problem: str | None = None
    """Why the job's graph could not be planned (the nodes are then the recorded ones)."""


def job_graph(
    root: Path, summary: JobSummary, results: list[AttemptResult], store: CacheStore | None
) -> JobGraph:
    recorded = _recorded_keys(summary, results)
    request = _request(root, summary, results, store)
    if store is None:
        problem = "no cache to look the nodes up in"
        return JobGraph(summary.job_id, _flags(request), _unplanned(recorded), problem)
    try:
        planned, request = _plan_of_job(request, recorded, store)
    except AgevalError as exc:
        return JobGraph(summary.job_id, _flags(request), _unplanned(recorded), str(exc))
    nodes = [
        GraphNode(
            id=node.id,
            kind=node.kind,
            key=node.key,
            status=node.status,
            parents=sorted(planned.parents(node.id)),
            job_key=recorded.get(node.id, (None, None))[0],
            job_outcome=recorded.get(node.id, (None, None))[1],
            explanation=explain(planned, node.id) if node.status == "miss" else None,
        )
        for node in planned.nodes()
    ]
    every_task = set(planned.task_ids) == set(dataset_of(planned).task_ids)
    return JobGraph(summary.job_id, _flags(request, every_task), nodes)


def _recorded_keys(
    summary: JobSummary, results: list[AttemptResult]
) -> dict[str, tuple[str, str | None]]:
    keys: dict[str, tuple[str, str | None]] = {"summary:job": (summary.summary_key, None)}
    for result in results:
        for node in result.nodes:
            keys.setdefault(node.id, (node.key, node.outcome))
    return keys


def _unplanned(recorded: dict[str, tuple[str, str | None]]) -> list[GraphNode]:
    return [
        GraphNode(node_id, node_id.split(":", 1)[0], key, "-", [], key, outcome, None)
        for node_id, (key, outcome) in sorted(recorded.items())
    ]


def _request(
    root: Path, summary: JobSummary, results: list[AttemptResult], store: CacheStore | None
) -> PlanRequest:
    lock = attempt_lock(root, results[0], store) if results else None
    overrides = (lock or {}).get("overrides") or {}
    binding = (lock or {}).get("binding") or {}
    profiles = binding.get("profiles_file")
    custom = binding.get("source") == "profiles" and profiles not in (None, PROFILES_FILE)
    return PlanRequest(
        dataset=root,
        tasks=tuple(sorted({result.task_id for result in results})),
        k=summary.k,
        binding=BindingRequest(
            agent=overrides.get("agent"),
            model=overrides.get("model"),
            profiles=root / str(profiles) if custom else None,
        ),
        sample=_current_sample(root),
    )


def _current_sample(root: Path) -> int:
    try:
        return int((root / SAMPLE_FILE).read_text().strip())
    except (OSError, ValueError):
        return 0


def _plan_of_job(
    request: PlanRequest, recorded: dict[str, tuple[str, str | None]], store: CacheStore
) -> tuple[Plan, PlanRequest]:
    """The plan at the current sample, or at the earlier one whose run keys are the job's."""
    runs = {key for node_id, (key, _) in recorded.items() if node_id.startswith("run:")}
    first: tuple[Plan, PlanRequest] | None = None
    for sample in range(request.sample, max(request.sample - SAMPLES_TRIED, -1), -1):
        candidate = replace(request, sample=sample)
        planned = plan(candidate, store)
        first = first or (planned, candidate)
        if runs <= {node.key for node in planned.nodes() if node.kind == "run"}:
            return planned, candidate
    assert first is not None
    return first


def _flags(request: PlanRequest, every_task: bool = False) -> str:
    parts = [f"-k {request.k}"]
    if not every_task:
        parts += [f"--task {task}" for task in request.tasks]
    if request.binding.agent:
        parts.append(f"--agent {request.binding.agent}")
    if request.binding.model:
        parts.append(f"--model {request.binding.model}")
    if request.binding.profiles:
        parts.append(f"--profiles {request.binding.profiles.name}")
    if request.sample:
        parts.append(f"(sample {request.sample})")
    return " ".join(parts)
