"""Turning node outcomes into result.json and summary.json documents."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agevalx.cache.manifest import ActionManifest, OutputRef
from agevalx.cache.store import CacheStore
from agevalx.errors import AgevalError
from agevalx.evaluation.result import read_result
from agevalx.formats.base import dataset_of
from agevalx.graph.context import ExecutionContext, NodeResult
from agevalx.graph.nodes import Node, node_id
from agevalx.graph.plan import Plan
from agevalx.graph.registry import node_executor
from agevalx.hashing import digest_bytes, digest_json
from agevalx.lockfile.models import TaskLock
from agevalx.lockfile.node import planned_lock
from agevalx.results.metrics import overall_metrics, task_metrics
from agevalx.results.models import (
    AttemptResult,
    ErrorInfo,
    JobSummary,
    NodeRef,
    PublishedArtifact,
    TaskMetrics,
    TryRecord,
)
from agevalx.results.paths import attempt_id
from agevalx.results.usage import cost_per_pass, total_usage
from agevalx.runner.output import RunOutput, usage_of_failure

ENVIRONMENT_CODES = frozenset(
    {
        "docker_unavailable",
        "image_build_failed",
        "image_unavailable",
        "image_missing",
        "environment_start_failed",
        "environment_timeout",
        "environment_gpu_unavailable",
        "setup_failed",
        "egress_network_mode_unfenced",
    }
)


SCORING_KINDS = frozenset({"evaluate", "scoring_image", "scoring_host"})
"""Node kinds of the evaluate stage (a scoring image or host fails the evaluation)."""


STAGES = ("environment", "run", "evaluate")


def _stage(kind: str, code: str) -> Any:
    if kind in ("lock", "image") or code in ENVIRONMENT_CODES:
        return "environment"
    return "evaluate" if kind in SCORING_KINDS else "run"


def try_records(
    tries: Mapping[str, Sequence[AgevalError]], node_ids: Sequence[str]
) -> list[TryRecord]:
    """The earlier, retried tries of the nodes `node_ids` (failures keyed by node id, e.g.
    `run:task#0`), numbered from 1 in stage order, then in the order they happened."""
    failed = [
        (_stage(name.split(":", 1)[0], error.code), error)
        for name in node_ids
        for error in tries.get(name, ())
    ]
    failed.sort(key=lambda item: STAGES.index(item[0]))
    return [
        TryRecord(number=number, stage=stage, code=error.code, message=error.message)
        for number, (stage, error) in enumerate(failed, start=1)
    ]


def _own_nodes(nodes: list[Node], attempt: int) -> list[str]:
    """The ids of the nodes of this attempt alone (a task's lock and image are shared by its
    attempts: their retries are not one attempt's tries)."""
    return list(dict.fromkeys(node.id for node in nodes if node.attempt == attempt))


def attempt_nodes(plan: Plan, task_id: str, attempt: int) -> list[Node]:
    names = [
        node_id("lock", task_id, None),
        node_id("image", task_id, None),
        node_id("run", task_id, attempt),
        node_id("evaluate", task_id, attempt),
    ]
    return [plan.node(name) for name in names]


def attempt_result(
    plan: Plan,
    store: CacheStore,
    task_id: str,
    attempt: int,
    actions: Mapping[str, ActionManifest],
    outcomes: Mapping[str, str],
    errors: Mapping[str, AgevalError],
    retried: Mapping[str, str] | None = None,
    tries: Mapping[str, Sequence[AgevalError]] | None = None,
) -> AttemptResult:
    """The result of one attempt from its nodes' cached outputs or failures; `retried` says
    which nodes a cluster ran a second time, and why; `tries` (node id -> the infrastructure
    failures of its earlier tries) become the result's `tries`. Every error carries its
    class from the failure catalogue."""
    nodes = attempt_nodes(plan, task_id, attempt)
    scoring = [plan.node(name) for name in plan.parents(nodes[3].id)]
    lock = planned_lock(plan, task_id)
    run, evaluate = actions.get(nodes[2].id), actions.get(nodes[3].id)
    roles = lock.binding.roles
    fields: dict[str, Any] = {
        "attempt_id": attempt_id(nodes[2]),
        "dataset_id": lock.dataset.dataset_id,
        "dataset_name": lock.harbor.run.dataset_name if lock.harbor else None,
        "task_id": task_id,
        "attempt": attempt,
        "config_digest": lock.config_digest,
        "agents": {role: bound.label for role, bound in roles.items()},
        "models": {role: (bound.model or {}).get("id") for role, bound in roles.items()},
        "nodes": [
            NodeRef(
                id=n.id,
                kind=n.kind,
                key=n.key,
                outcome=outcomes.get(n.id, "blocked"),
                retried=(retried or {}).get(n.id),
            )
            for n in nodes
        ],
        "tries": try_records(tries or {}, _own_nodes([*nodes, *scoring], attempt)),
    }
    seconds: dict[str, float] = {}
    if run is not None:
        output = RunOutput.of(run)
        fields["artifacts"] = published(store, run, lock)
        fields["limit"] = output.limit
        fields["forked_from"] = output.forked_from
        fields["invocations"] = output.invocations
        fields["usage"] = output.model_usage
        seconds.update(output.seconds)
    evaluation = None
    if evaluate is not None:
        try:
            evaluation = read_result(store, evaluate)
        except AgevalError as exc:
            errors = {**errors, nodes[3].id: exc}
    if evaluation is not None:
        seconds["evaluate"] = evaluation.seconds
        fields["evaluator_usage"] = evaluation.usage
        fields["evaluator_output"] = evaluation.evaluator_output
        if evaluation.status != "ERROR":
            fields.update(
                status=evaluation.status, score=evaluation.score, details=evaluation.details
            )
        else:
            problem = evaluation.error
            if problem is not None and problem.traceback:
                fields["artifacts"] = [
                    *fields.get("artifacts", []),
                    diagnostics_artifact(problem.traceback),
                ]
            fields.update(
                status="ERROR",
                error=ErrorInfo(
                    code="evaluator_error",
                    stage="evaluate",
                    message=f"{problem.type}: {problem.message}" if problem else "Error",
                    hint=((problem.traceback if problem else None) or "")[-1500:] or None,
                ),
            )
    else:
        failed = next((n for n in [*nodes, *scoring] if n.id in errors), None)
        error = errors[failed.id] if failed else None
        if run is None and nodes[2].id in errors:  # what the failed run stage used so far
            fields["usage"] = usage_of_failure(errors[nodes[2].id])
        code = error.code if error else "not_computed"
        fields.update(
            status="ERROR",
            error=ErrorInfo(
                code=code,
                stage=_stage(failed.kind if failed else "run", code),
                message=error.message if error else "the attempt was not computed",
                hint=error.hint if error else None,
            ),
        )
    fields["seconds"] = seconds
    return AttemptResult(**fields)


DIAGNOSTICS = "execution_diagnostics"
"""The artifact that keeps the full traceback of an evaluator (a Harbor verifier) that
raised; its file is `artifacts/execution_diagnostics.txt` of the attempt."""
DIAGNOSTICS_FILE = f"{DIAGNOSTICS}.txt"


def diagnostics_artifact(traceback: str) -> PublishedArtifact:
    return PublishedArtifact(
        id=DIAGNOSTICS,
        path=DIAGNOSTICS_FILE,
        producer="evaluate",
        digest=digest_bytes(traceback.encode("utf-8", "replace")),
    )


def diagnostics_text(store: CacheStore, evaluate: ActionManifest | None) -> str | None:
    """The full traceback an ERROR evaluation kept, if any."""
    if evaluate is None:
        return None
    try:
        evaluation = read_result(store, evaluate)
    except AgevalError:
        return None
    return evaluation.error.traceback if evaluation.error is not None else None


def published(store: CacheStore, run: ActionManifest, lock: TaskLock) -> list[PublishedArtifact]:
    """The run's artifacts: each publishable entry (with its digest, None when the run left
    nothing there), or every collected file for a task that declares none."""
    output = run.outputs.get("artifacts")
    entries = store.get_tree(output.digest).entries if output is not None else []
    files = {entry.path: entry for entry in entries if entry.type != "dir"}
    declared = lock.task.artifacts.publishable
    if not declared:
        return [
            PublishedArtifact(id=path, path=path, producer="run", digest=entry.digest)
            for path, entry in sorted(files.items())
        ]
    listed = []
    for item in declared:
        inside = [e.model_dump(mode="json") for e in entries if e.path.startswith(f"{item.path}/")]
        found = files.get(item.path)
        digest = found.digest if found else (digest_json(inside) if inside else None)
        listed.append(
            PublishedArtifact(id=item.id, path=item.path, producer=item.producer, digest=digest)
        )
    return listed


def attempt_index(result: AttemptResult) -> dict[str, Any]:
    """An attempt's entry in summary.json's `attempts` (the result path is relative)."""
    return {
        "task_id": result.task_id,
        "attempt": result.attempt,
        "status": result.status,
        "score": result.score,
        "attempt_id": result.attempt_id,
        "result": f"../../runs/{result.attempt_id}/result.json",
    }


def job_summary(
    plan: Plan,
    results: list[AttemptResult],
    k: int,
    summary_key: str,
    count_infra_as_fail: bool = False,
) -> JobSummary:
    """summary.json of `results`; an infrastructure ERROR is left out of the scores unless
    `count_infra_as_fail`."""
    dataset = dataset_of(plan)
    stops_at_pass = dataset.attempt_strategy() == "pass"
    tasks = {}
    for task_id in plan.task_ids:
        mine = [result for result in results if result.task_id == task_id]
        metrics = task_metrics(
            [r.status for r in mine],
            [r.score for r in mine],
            [r.limit for r in mine],
            k,
            [r.failure_class for r in mine],
            count_infra_as_fail=count_infra_as_fail,
        )
        tasks[task_id] = _stopped_at_first_pass(metrics, k) if stops_at_pass else metrics
    slug = dataset.dataset_id.replace("/", "-")
    usage = total_usage(usage for result in results for usage in result.usage.values())
    passed = sum(1 for result in results if result.status == "PASS")
    return JobSummary(
        job_id=f"{slug}-{summary_key[:12]}",
        dataset_id=dataset.dataset_id,
        k=k,
        tasks=tasks,
        overall=overall_metrics(list(tasks.values())),
        attempts=[attempt_index(result) for result in results],
        usage=usage,
        cost_per_pass=cost_per_pass(usage, passed),
        evaluator_usage=total_usage(
            usage for result in results for usage in result.evaluator_usage.values()
        ),
        summary_key=summary_key,
        **dataset.summary_sections(plan.task_ids, results),
    )


def _stopped_at_first_pass(metrics: TaskMetrics, k: int) -> TaskMetrics:
    """Under the `pass` strategy a task stops at its first pass: pass@k is whether it passed
    within k attempts (the unbiased estimator needs all k), and pass^k is unknown."""
    judged = metrics.n - metrics.done
    known = metrics.passed > 0 or judged >= k
    return metrics.model_copy(
        update={"pass_at_k": float(metrics.passed > 0) if known else None, "pass_hat_k": None}
    )


def attempts_of(plan: Plan) -> list[tuple[str, int]]:
    """(task, attempt) pairs of a plan, in task order."""
    return [
        (node.task_id, node.attempt)
        for node in plan.nodes()
        if node.kind == "run" and node.task_id is not None and node.attempt is not None
    ]


@node_executor("summary")
def execute_summary(node: Node, context: ExecutionContext) -> NodeResult:
    """The summary node: metrics over every attempt of the job, stored as summary.json."""
    plan = context.plan
    pairs = attempts_of(plan)
    outcomes = dict.fromkeys(plan.node_ids(), "reused")
    results = [
        attempt_result(plan, context.store, task, attempt, context.results, outcomes, {})
        for task, attempt in pairs
    ]
    k = max(attempt for _, attempt in pairs) + 1
    summary = job_summary(plan, results, k, node.key)
    digest = context.store.put_bytes(summary.model_dump_json(indent=2).encode())
    return NodeResult(outputs={"summary": OutputRef(digest=digest, type="blob")})
