"""`ageval run`: plan the job's graph, compute what is missing, write results as views."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agevalx.cache.layered import LayeredStore
from agevalx.cache.manifest import ActionManifest
from agevalx.cache.remote.stats import RemoteStats
from agevalx.cache.store import CacheStore
from agevalx.environments.container import (
    interrupt_session,
    remove_session_containers,
    reopen_session,
)
from agevalx.environments.owners import ReapReport, adopting, other_owners, reap_orphans
from agevalx.environments.standby import standby
from agevalx.errors import AgevalError, AgevalWarning, UsageError
from agevalx.formats.base import Dataset, dataset_of
from agevalx.fsutil import atomic_write, write_if_changed
from agevalx.gateway.budget import JOB_LIMIT, JobBudget
from agevalx.graph.context import Dispatch
from agevalx.graph.execute import ExecutionReport, NodeReport, execute, run_node
from agevalx.graph.journal import record
from agevalx.graph.nodes import Node
from agevalx.graph.plan import Plan
from agevalx.hashing import digest_bytes, digest_json
from agevalx.images.build import revalidate_images
from agevalx.lockfile.node import write_lock_view
from agevalx.operations.job import (
    OFF_ENGINE,
    EngineWatch,
    admission,
    continue_interrupted,
    retry_policy,
)
from agevalx.operations.lineage import fork_branch, record_branch
from agevalx.operations.lintgate import lint_before_run
from agevalx.operations.planning import PlanRequest, check_k, open_for, plan
from agevalx.operations.recovery import (
    check_resumable,
    fork_image,
    fork_origin,
    mark_resume,
    record_profiles,
    resumed_container,
    source_binding,
)
from agevalx.operations.request import RunRequest
from agevalx.operations.share import FiledJob, checkpoint_keys, record_job, refile_job
from agevalx.operations.views import CHECKPOINT_INDEX, write_attempt_views, write_checkpoint_index
from agevalx.operations.viewstamp import (
    Stamp,
    current_results,
    filed_job,
    note_filed_job,
    views_digest,
    write_stamp,
)
from agevalx.results.build import (
    attempt_result,
    attempts_of,
    diagnostics_text,
    job_summary,
)
from agevalx.results.models import AttemptResult, JobRun, JobSummary
from agevalx.results.paths import attempt_dir, attempt_id, suite_dir
from agevalx.runner.output import RunOutput
from agevalx.runner.recovery import read_attempt

if TYPE_CHECKING:
    from agevalx.cluster.dispatch import Cluster
    from agevalx.gateway.server import Gateway

SAMPLE_FILE = ".ageval/sample"


@dataclass
class RunOutcome:
    """The attempts' results, the job summary (k > 1 or several tasks), every node's outcome."""

    plan: Plan
    report: ExecutionReport
    results: list[AttemptResult]
    summary: JobSummary | None
    summary_path: Path | None
    reaped: ReapReport = field(default_factory=ReapReport)
    """What dead ageval processes of this host had left in Docker, removed before the run."""
    remote: RemoteStats | None = None
    """With a remote (`--remote`, `$AGEVAL_REMOTE`): its hits, misses, uploads, errors."""
    job_ref: str | None = None
    """The ref keeping this run's job record and nodes (what push and pull of it move)."""
    budget: JobBudget = field(default_factory=JobBudget)
    """What the job's agents spent (reused attempts included), against its limits."""
    continued: list[str] = field(default_factory=list)
    """Attempts a dead process had left unfinished, resumed from their last checkpoint."""
    not_run: int = 0
    """Attempts the spend limit kept from starting."""
    stamp: Stamp | None = None
    """The stamp of the job's views, when they can be stamped (`operations.viewstamp`)."""
    vouched: bool = False
    """Whether that stamp vouched for the views: none was written again."""

    @property
    def ok(self) -> bool:
        return all(result.status != "ERROR" for result in self.results)

    @property
    def warnings(self) -> list[AgevalWarning]:
        """What loading reported (a Harbor job config's declared fields it did not apply),
        then what the attempts' results report (a Harbor reward that is not valid)."""
        dataset = dataset_of(self.plan)
        return [*dataset.warnings(), *dataset.result_warnings(self.results)]


def _sample(dataset: Path, fresh: bool) -> int:
    """The dataset's current sample number; `--fresh` moves it on, so new attempts are made."""
    path = dataset / SAMPLE_FILE
    try:
        current = int(path.read_text().strip())
    except (OSError, ValueError):
        current = 0
    if fresh:
        current += 1
        atomic_write(path, f"{current}\n".encode())
    return current


def run(
    request: RunRequest,
    store: CacheStore,
    on_progress: Callable[[NodeReport], None] | None = None,
    on_start: Callable[[Node], None] | None = None,
    on_plan: Callable[[Plan], None] | None = None,
    budget: JobBudget | None = None,
) -> RunOutcome:
    """Run (or reuse) every attempt of the request and write result.json / summary.json.

    `budget` counts the job's spend against its limits (one is made from `request.limits`
    when not given; pass one to watch the spend while the job runs)."""
    if request.k < 1:
        raise UsageError("invalid_k", "-k must be at least 1", field="-k")
    check_k(request.k)
    if request.dataset is None and (request.resume or request.fork):
        raise UsageError(
            "dataset_required", "--resume and --fork need the dataset directory", field="DATASET"
        )
    attempts = check_resumable(request) if request.resume else None
    _check_limits(request)
    budget = budget or request.limits.budget()
    with (
        adopting(resumed_container(request) if request.resume else None),
        _cluster(request, store) as cluster,
    ):
        callbacks = _Callbacks(on_progress, on_start, on_plan, cluster, budget)
        outcome = _run(request, store, attempts, callbacks)
    outcome.reaped = callbacks.reaped[0] if callbacks.reaped else ReapReport()
    outcome.budget = budget
    outcome.job_ref = _file_job(outcome, store)
    if isinstance(store, LayeredStore):
        outcome.remote = store.remote_stats
    return outcome


def _check_limits(request: RunRequest) -> None:
    limits = request.limits
    if limits.retry_infra < 0:
        raise UsageError(
            "invalid_retry_infra", "--retry-infra must be 0 or more", field="--retry-infra"
        )
    for name, value in (("--max-cost", limits.max_cost), ("--max-tokens", limits.max_tokens)):
        if value is not None and value <= 0:
            raise UsageError("invalid_job_limit", f"{name} must be more than 0", field=name)
    limited = limits.max_cost is not None or limits.max_tokens is not None
    if request.cluster is not None and limited:
        raise UsageError(
            "cluster_job_limit_unsupported",
            "--max-cost and --max-tokens count the spend of this machine's gateway; a cluster's "
            "workers each run their own",
            field="--cluster",
            hint="run without --cluster, or without the spend limit",
        )


def _file_job(outcome: RunOutcome, store: CacheStore) -> str | None:
    """File the job's record and ref (`record_job`); the ref's name. A no-op run whose views
    the stamp vouched for would file the same record as the run that wrote the stamp (the
    stamp's digest covers the results and the checkpoints, `contents` the rest): the ref
    that run noted is checked (`refile_job`) instead of making the record again."""
    version = dataset_of(outcome.plan).version
    root, stamp = outcome.plan.dataset.root, outcome.stamp
    contents = None
    if stamp is not None:
        summary = outcome.summary.model_dump(mode="json") if outcome.summary else None
        contents = digest_json(["job record", stamp.digest, summary, version])
        noted = filed_job(root, stamp, contents) if outcome.vouched else None
        if noted is not None and refile_job(store, FiledJob(*noted)):
            return noted[0]
    checkpoints = _kept_checkpoints(outcome, store)
    filed = record_job(store, outcome.results, outcome.summary, checkpoints, version)
    if filed is None:
        return None
    if stamp is not None and contents is not None:
        note_filed_job(root, stamp, contents, filed)
    return filed.ref


def _kept_checkpoints(outcome: RunOutcome, store: CacheStore) -> list[str]:
    """The checkpoint keys of the attempts that keep their recovery state (fork, resume)."""
    root = outcome.plan.dataset.root
    keys: list[str] = []
    for result in outcome.results:
        if not (attempt_dir(root, result.attempt_id) / CHECKPOINT_INDEX).is_file():
            continue
        for node in result.nodes:
            if node.kind == "run" and node.outcome in ("reused", "computed"):
                keys += checkpoint_keys(store, store.get_action("run", node.key))
    return keys


def _run(
    request: RunRequest,
    store: CacheStore,
    attempts: tuple[int, ...] | None,
    callbacks: _Callbacks,
) -> RunOutcome:
    origin, inherited = fork_origin(request) if request.fork else (None, [])
    if request.fork and request.binding.agent is None and request.binding.profiles is None:
        # A fork binds its agents as its source did, unless told otherwise.
        assert request.dataset is not None
        recorded = source_binding(request.dataset, request.fork, store)
        binding = replace(recorded, fork_model=request.binding.fork_model)
        request = replace(request, binding=binding)
    sample = _sample(request.dataset or Path.cwd(), request.fresh)
    plan_request = PlanRequest(
        dataset=request.dataset,
        tasks=request.tasks,
        k=max(attempts) + 1 if attempts else request.k,
        binding=request.binding,
        sample=sample,
        attempts=attempts,
        fork=origin,
        harbor=request.harbor,
    )
    dataset = open_for(plan_request)
    if dataset.attempt_strategy() == "pass" and request.k > 1 and not (attempts or origin):
        return _run_until_passed(plan_request, request, store, callbacks, dataset)
    image = None
    if origin is not None and not dataset.checkpoints_hold_state():
        image = fork_image(request, origin["checkpoint"], store)
        plan_request = replace(plan_request, fork={**origin, "start": "source image"})
    planned = plan(plan_request, store, dataset)
    _lint(planned, request, store)
    if origin is not None:
        for node in planned.nodes():
            if node.kind == "run":
                node.payload["fork"] = {**origin, "records": inherited, "image": image}
    _mark_runs(planned, request)
    continued: list[str] = []
    if request.resume:
        mark_resume(planned, request.resume)
    elif origin is None:
        continued = continue_interrupted(planned)
    report = _execute(planned, request, store, callbacks)
    outcome = _write_views(planned, store, report, request, callbacks)
    outcome.continued = continued
    return outcome


def _mark_runs(planned: Plan, request: RunRequest) -> None:
    """What the run nodes' executor reads of the request beside their keys."""
    for node in planned.nodes():
        if node.kind == "run":
            node.payload["run_py"] = "trusted" if request.trust_run_py else "sandbox"
            if request.keep_recovery_state:
                node.payload["keep_recovery_state"] = True


def _lint(planned: Plan, request: RunRequest, store: CacheStore) -> None:
    """Lint's error-level checks over the planned tasks, before anything is built or paid."""
    if request.lint and request.dataset is not None:
        lint_before_run(planned, store, planned.dataset.root)


@dataclass(frozen=True)
class _Callbacks:
    on_progress: Callable[[NodeReport], None] | None
    on_start: Callable[[Node], None] | None
    on_plan: Callable[[Plan], None] | None
    cluster: Cluster | None = None
    budget: JobBudget = field(default_factory=JobBudget)
    gateway: list[dict[str, Any]] = field(default_factory=list)
    """The gateway's concurrency figures per upstream, read as the job's execution ended."""
    reaped: list[ReapReport] = field(default_factory=list)
    """What the run's orphan reap removed: done once, before the first execution that needs
    the engine (none when every node the engine would compute is reused)."""


@contextmanager
def _cluster(request: RunRequest, store: CacheStore) -> Iterator[Cluster | None]:
    """The Ray cluster of `--cluster` (Ray is imported only then), else None."""
    if request.cluster is None:
        yield None
        return
    if request.resume:
        raise UsageError(
            "cluster_resume_unsupported",
            "--resume continues an attempt in this machine's container; it cannot run on a cluster",
            field="--cluster",
            hint="resume without --cluster",
        )
    from agevalx.cluster.dispatch import connected

    with connected(request.cluster, store) as cluster:
        yield cluster


def _check_clusterable(dataset: Dataset) -> None:
    outside = dataset.tasks_outside_root()
    if outside:
        shown = ", ".join(outside[:5]) + (", ..." if len(outside) > 5 else "")
        raise UsageError(
            "cluster_tasks_outside_dataset",
            f"the workers get only the dataset directory's files, and {len(outside)} task(s) "
            f"come from elsewhere (a job config's datasets/tasks): {shown}",
            field="--cluster",
            hint="run the task directory itself (ageval run DIR --cluster ...), or run without "
            "--cluster",
        )


def _execute(
    planned: Plan, request: RunRequest, store: CacheStore, callbacks: _Callbacks
) -> ExecutionReport:
    if callbacks.cluster is not None:
        _check_clusterable(dataset_of(planned))
    engine = callbacks.cluster is not None or _needs_engine(planned, request)
    if engine:
        if not callbacks.reaped:  # once per run (the `pass` strategy executes in rounds)
            callbacks.reaped.append(reap_orphans())
        revalidate_images(planned)
    if callbacks.on_plan is not None:
        callbacks.on_plan(planned)
    workers = request.workers or dataset_of(planned).max_concurrent_tasks
    cluster = callbacks.cluster
    if cluster is not None:  # the workers' `docker` resources bound the concurrency
        workers = request.workers or max(1, cluster.capacity)
    else:  # as many attempts run at once as there are workers, or runs to do if fewer
        runs = sum(1 for node in planned.nodes() if node.kind == "run")
        standby().size_for(min(workers, runs), others=other_owners() if engine and runs else 0)

    def interrupted() -> None:
        if cluster is not None:
            cluster.interrupt()
        interrupt_session()

    budget = callbacks.budget
    if cluster is None:  # the gateway of this process counts the job's spend
        for node in planned.nodes():
            if node.kind == "run":
                node.payload["job_budget"] = budget

    def progressed(report: NodeReport) -> None:
        if report.node.kind == "run" and report.outcome == "reused" and report.action:
            for usage in RunOutput.of(report.action).model_usage.values():
                budget.add_usage(usage)
        if callbacks.on_progress is not None:
            callbacks.on_progress(report)

    with contextlib.ExitStack() as stack:
        if cluster is None and engine and _uses_model(planned):
            # One gateway for the whole execution: its concurrency per upstream is learned
            # once, and its figures are read before it stops.
            from agevalx.gateway.server import shared_gateway

            gateway = stack.enter_context(shared_gateway())
            stack.callback(lambda: callbacks.gateway.extend(_figures(gateway)))
        if not engine:  # every node is reused, or computed on this machine alone
            retry = retry_policy(request.limits.retry_infra, resume=True)
            return execute(
                planned,
                store,
                workers=workers,
                on_progress=progressed,
                on_start=callbacks.on_start,
                retry=retry,
            )
        return _execute_in(planned, store, request, callbacks, workers, progressed, interrupted)


def _needs_engine(planned: Plan, request: RunRequest) -> bool:
    """Whether executing the plan may ask the Docker engine for anything: a node it computes
    there, or a resume. A job whose every such node is reused (make's no-op) does not: its
    images are not asked after, nothing is reaped, no container is started or listed, and it
    reports from the cache with no engine running."""
    if request.resume:
        return True
    return any(
        node.kind not in OFF_ENGINE and (node.status != "hit" or node.action is None)
        for node in planned.nodes()
    )


def _figures(gateway: Gateway) -> list[dict[str, Any]]:
    """The gateway's concurrency figures per upstream, as summary.json keeps them."""
    return [dict(figure) for figure in gateway.concurrency()]


def _uses_model(planned: Plan) -> bool:
    """Whether a role of a planned task talks to a model through the gateway."""
    return any(
        role.get("base_url")
        for task_id in planned.task_ids
        for role in planned.lock(task_id)["binding"]["roles"].values()
    )


def _execute_in(
    planned: Plan,
    store: CacheStore,
    request: RunRequest,
    callbacks: _Callbacks,
    workers: int,
    progressed: Callable[[NodeReport], None],
    interrupted: Callable[[], None],
) -> ExecutionReport:
    cluster = callbacks.cluster
    dispatch: Dispatch
    watch: EngineWatch | None = None
    if cluster is not None:  # its nodes run on its workers' engines: one stuck is that worker's
        dispatch = cluster
    else:
        watch = EngineWatch()
        dispatch = watch.watching(run_node)
    reopen_session()
    try:
        report = execute(
            planned,
            store,
            workers=workers,
            on_progress=progressed,
            on_interrupt=interrupted,
            on_start=callbacks.on_start,
            dispatch=dispatch,
            retry=retry_policy(request.limits.retry_infra, resume=cluster is None, watch=watch),
            admit=admission(callbacks.budget, watch),
        )
        if cluster is not None:  # the result files read what the workers computed
            cluster.settle()
        return report
    finally:
        remove_session_containers()


def _run_until_passed(
    plan_request: PlanRequest,
    request: RunRequest,
    store: CacheStore,
    callbacks: _Callbacks,
    dataset: Dataset,
) -> RunOutcome:
    """The `pass` strategy: attempt i of a task runs only when attempts 0..i-1 all failed.

    Each round is planned and cached like any run (a re-run replays the rounds from the
    cache); the summary covers the attempts that ran, so it is written, not cached.
    """
    first: Plan | None = None
    nodes: dict[str, NodeReport] = {}
    actions: dict[str, ActionManifest] = {}
    results: list[AttemptResult] = []
    pending = plan_request.tasks
    for attempt in range(request.k):
        planned = plan(replace(plan_request, tasks=pending, attempts=(attempt,)), store, dataset)
        if first is None:
            _lint(planned, request, store)
        _mark_runs(planned, request)
        first = first or planned
        report = _execute(planned, request, store, callbacks)
        for item in report.nodes:  # lock and image are planned in every round: count once
            if item.node.id not in nodes or item.outcome != "reused":
                nodes[item.node.id] = item
        actions.update(report.actions)
        round_results = _write_views(planned, store, report, request, callbacks).results
        results += round_results
        pending = tuple(r.task_id for r in round_results if r.status != "PASS")
        if not pending:
            break
    assert first is not None
    report = ExecutionReport(nodes=list(nodes.values()), actions=actions)
    key = digest_json(sorted(ref.key for r in results for ref in r.nodes if ref.kind == "run"))
    summary = job_summary(first, results, request.k, key, request.limits.count_infra_as_fail)
    not_run = sum(
        1 for item in report.nodes if item.node.kind == "run" and item.outcome == "skipped"
    )
    summary.run = job_run(report, callbacks.budget, not_run, callbacks.gateway)
    outcome = RunOutcome(first, report, results, summary, _write_summary(first, summary))
    outcome.not_run = not_run
    return outcome


def _write_views(
    planned: Plan,
    store: CacheStore,
    report: ExecutionReport,
    request: RunRequest,
    callbacks: _Callbacks,
) -> RunOutcome:
    budget = callbacks.budget
    actions = {item.node.id: item.node.action for item in report.nodes if item.node.action}
    actions.update(report.actions)
    root = planned.dataset.root
    forked = _forked(planned)
    stamp = None if forked else _stamp_of(planned, report, request)
    results = current_results(root, stamp) if stamp is not None else None
    vouched, not_run = results is not None, 0
    if results is None:  # the views are written (again), unless the stamp vouches for them
        written = _write_node_views(planned, report, forked)
        results, not_run = _write_attempt_views(planned, store, report, request, actions, budget)
        if stamp is not None:
            directories = [attempt_dir(root, result.attempt_id) for result in results]
            write_stamp(root, stamp, directories, written, results)
    summary, path = None, None
    if "summary:job" in planned:
        node = planned.node("summary:job")
        action = actions.get(node.id)
        if action is not None:
            summary = JobSummary.model_validate(
                json.loads(store.get_bytes(action.outputs["summary"].digest))
            )
        else:
            k = max((result.attempt for result in results), default=0) + 1
            summary = job_summary(planned, results, k, node.key, request.limits.count_infra_as_fail)
        summary.run = job_run(report, budget, not_run, callbacks.gateway)
        path = _write_summary(planned, summary)
    outcome = RunOutcome(planned, report, results, summary, path)
    outcome.not_run = not_run
    outcome.stamp, outcome.vouched = stamp, vouched
    return outcome


def _stamp_of(planned: Plan, report: ExecutionReport, request: RunRequest) -> Stamp | None:
    """The stamp the job's views are checked by, when they can be stamped (see
    `agevalx.operations.viewstamp`): a job with a summary node whose every node was reused
    (a fork's views are not stamped)."""
    if "summary:job" not in planned:
        return None
    profiles = request.binding.profiles
    try:
        profiles_digest = digest_bytes(profiles.read_bytes()) if profiles is not None else None
    except OSError:
        return None
    options = {
        "root": str(planned.dataset.root),
        "keep_recovery_state": request.keep_recovery_state,
        "profiles": [str(profiles), profiles_digest],
    }
    attempts = tuple(
        attempt_id(planned.node(f"run:{task_id}#{attempt}"))
        for task_id, attempt in attempts_of(planned)
    )
    digest = views_digest(report.nodes, attempts, options)
    return None if digest is None else Stamp(planned.node("summary:job").key, digest, attempts)


def _forked(planned: Plan) -> bool:
    return any("fork" in node.payload for node in planned.nodes() if node.kind == "run")


def _write_node_views(planned: Plan, report: ExecutionReport, forked: bool) -> list[Path]:
    """The journal record of every finished node and the lock views; the files written."""
    root = planned.dataset.root
    written: list[Path] = []
    for item in report.nodes:
        if item.outcome in ("reused", "computed"):
            # A fork's nodes share their source's identities: they are recorded as a branch,
            # and the journal and lock views keep the source's, for `graph explain`.
            branch = fork_branch(root, item.node)
            if branch is not None:
                record_branch(root, branch)
            if forked:
                continue
            written.append(record(root, item.node))
            if item.node.kind == "lock":
                written.append(write_lock_view(root, item.node))
    return written


def _write_attempt_views(
    planned: Plan,
    store: CacheStore,
    report: ExecutionReport,
    request: RunRequest,
    actions: dict[str, ActionManifest],
    budget: JobBudget,
) -> tuple[list[AttemptResult], int]:
    """Each attempt's result and views (`.ageval/runs/<attempt>/`); the results, and how many
    attempts the spend limit kept from starting."""
    keep_recovery_state = request.keep_recovery_state
    outcomes = {item.node.id: item.outcome for item in report.nodes}
    errors: dict[str, AgevalError] = {
        item.node.id: item.error for item in report.nodes if item.error is not None
    }
    retried = {item.node.id: item.retried for item in report.nodes if item.retried is not None}
    tries = {item.node.id: item.tries for item in report.nodes if item.tries}
    skipped = {item.node.id for item in report.nodes if item.outcome == "skipped"}
    root = planned.dataset.root
    results = []
    not_run = 0
    for task_id, attempt in attempts_of(planned):
        if f"run:{task_id}#{attempt}" in skipped:  # the spend limit kept it from starting
            not_run += 1
            continue
        result = attempt_result(
            planned, store, task_id, attempt, actions, outcomes, errors, retried, tries
        )
        if result.error is not None and result.error.code == JOB_LIMIT:
            result.limit = budget.reached or result.limit
        run_action = actions.get(f"run:{task_id}#{attempt}")
        evaluation = actions.get(f"evaluate:{task_id}#{attempt}")
        diagnostics = diagnostics_text(store, evaluation)
        write_attempt_views(root, store, result, run_action, diagnostics, evaluation)
        record_profiles(
            attempt_dir(root, result.attempt_id),
            request.binding.profiles,
            planned.lock(task_id)["binding"].get("profiles_file"),
        )
        kept = read_attempt(attempt_dir(root, result.attempt_id))
        if (keep_recovery_state or (kept and kept.keep_recovery_state)) and run_action:
            write_checkpoint_index(attempt_dir(root, result.attempt_id), store, run_action)
        results.append(result)
    return results, not_run


def job_run(
    report: ExecutionReport, budget: JobBudget, not_run: int, gateway: list[dict[str, Any]]
) -> JobRun:
    """This invocation's figures for summary.json: retries, spend and limits, the gateway's
    concurrency per upstream (not part of the summary's content key)."""
    retried: dict[str, int] = {}
    for item in report.nodes:
        for error in item.tries:
            retried[error.code] = retried.get(error.code, 0) + 1
    stopped = sum(
        1
        for item in report.nodes
        if item.node.kind == "run"
        and item.outcome == "failed"
        and item.error is not None
        and item.error.code == JOB_LIMIT
    )
    return JobRun(
        retries=sum(retried.values()),
        retried_codes=retried,
        not_run=not_run,
        stopped_by_limit=stopped,
        limit=budget.reached,
        spend=budget.figures(),
        gateway=gateway,
    )


def _write_summary(planned: Plan, summary: JobSummary) -> Path:
    """Write summary.json under .ageval/suite-runs/<job_id>/; its path."""
    path = suite_dir(planned.dataset.root, summary.job_id) / "summary.json"
    write_if_changed(path, summary.model_dump_json(indent=2).encode() + b"\n")
    return path
