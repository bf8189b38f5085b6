"""The run node's executor: environment stage, then run stage, then the final snapshot.

One runner for every task format. The task's `TaskRuntime` (its format's hooks) says how the
container is set up and prepared, where the agent works, what run.py or the default run is,
and how the oracle runs; everything else here (the journal, checkpoints, resume, fork,
quotas, the committed image) is the same for all.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agevalx.agents.base import (
    AgentError,
    Container,
    Executor,
    Invocation,
    InvocationResult,
    OracleLayout,
    WallTimeExceeded,
)
from agevalx.agents.bundles import role_bundles
from agevalx.cache.manifest import OutputRef
from agevalx.cache.store import CacheStore
from agevalx.config.secrets import resolve_reference
from agevalx.environments.attempt import AttemptEnvironment
from agevalx.environments.compose import project_name
from agevalx.environments.container import (
    ATTEMPT_LABEL,
    HOME,
    PRIVATE,
    AttemptContainer,
    ContainerSpec,
    container_name,
    find_container,
)
from agevalx.environments.egress import EgressFence, allowed_hosts, move_behind
from agevalx.environments.engine import EnvironmentFailure, image_exists
from agevalx.environments.gpus import check_requests
from agevalx.environments.owners import this_process
from agevalx.environments.standby import standby
from agevalx.errors import AgevalError
from agevalx.formats.base import TaskRuntime, dataset_of
from agevalx.gateway.attempt import AttemptRoutes
from agevalx.gateway.recording import ABANDONED_TRAFFIC, MODEL_TRAFFIC, TrafficLog
from agevalx.gateway.replaying import ResumedTraffic
from agevalx.graph.context import ExecutionContext, NodeResult
from agevalx.graph.nodes import Node
from agevalx.graph.registry import node_executor
from agevalx.hashing import canonical_json
from agevalx.images.build import image_labels, image_reference
from agevalx.lockfile.models import TaskLock
from agevalx.lockfile.node import task_lock
from agevalx.redaction import Redactor
from agevalx.results.paths import attempt_dir, attempt_id
from agevalx.runner.activity import ActivityJournal
from agevalx.runner.collect import collect
from agevalx.runner.context import QuotaExhausted, Quotas, RunContext
from agevalx.runner.output import RunOutput, with_usage
from agevalx.runner.recovery import (
    AttemptRecord,
    Replayer,
    ResumePoint,
    read_attempt,
    resume_point,
    set_aside,
    write_attempt,
)
from agevalx.runner.snapshot import (
    Snapshot,
    SnapshotRoots,
    restore,
    snapshot,
    store_checkpoint,
)

COMMITTED_REPOSITORY = "ageval/run"


class _Executors(dict[str, Executor]):
    """Agent executors by kind, each imported on first use."""

    def get(self, kind: str, default: Executor | None = None) -> Executor | None:  # type: ignore[override]
        if kind not in self:
            if kind == "oracle":
                from agevalx.agents.oracle import OracleExecutor

                self[kind] = OracleExecutor()
            elif kind == "acp":
                from agevalx.agents.acp.executor import AcpExecutor

                self[kind] = AcpExecutor()
            else:  # a format's own agents (Harbor's)
                from agevalx.formats.agent_executors import format_executor

                found = format_executor(kind)
                if found is None:
                    return default
                self[kind] = found
        return self[kind]


def executors() -> dict[str, Executor]:
    return _Executors()


ACP_EXECUTOR = "agevalx.agents.acp.executor"
PREFETCH = "ageval-prefetch"
"""The name of the thread that imports it ahead of the first ACP invocation."""


def prefetch_executors(kinds: Collection[str]) -> None:
    """Starts importing the ACP executor on a thread when `kinds` (the executors of a lock's
    roles) hold `acp`.

    The ACP SDK's import is about a second of CPU (pydantic builds its 270 schema models);
    started here, it runs while the environment stage waits on Docker, and the executor's
    import in `_Executors.get` waits for it (Python's per-module import lock). Oracle runs
    never import the SDK.
    """
    if "acp" in kinds and ACP_EXECUTOR not in sys.modules:
        prefetch = threading.Thread(target=_import_quietly, args=(ACP_EXECUTOR,), name=PREFETCH)
        prefetch.start()


def _import_quietly(module: str) -> None:
    # A failure is raised again, with its error, by the import that needs the module.
    with contextlib.suppress(Exception):
        importlib.import_module(module)


@dataclass
class StageClock:
    """Seconds spent per stage."""

    seconds: dict[str, float] = field(default_factory=dict)

    def add(self, stage: str, started: float) -> None:
        self.seconds[stage] = round(self.seconds.get(stage, 0.0) + time.monotonic() - started, 3)


def profiles(lock: TaskLock) -> dict[str, dict[str, Any]]:
    """The roles' locked profiles as the agent executors read them."""
    return {role: bound.model_dump(mode="json") for role, bound in lock.binding.roles.items()}


@dataclass(frozen=True)
class Workplace:
    """A started environment as the run stage uses it."""

    environment: AttemptEnvironment
    workdir: str
    """The agent's working directory."""
    environment_names: tuple[str, ...] = ()
    """Variables ageval set on the container (their values may be secrets)."""
    oracle_seeded: bool = False
    """The oracle's solution/ came in as the container started (`_oracle_solution`)."""
    bundles: Mapping[str, str] = field(default_factory=dict)
    """The agent bundles mounted at the container's start, name to key (empty: not known)."""

    @property
    def container(self) -> AttemptContainer:
        return self.environment.container


RecordNames = Callable[[str, str | None], None]
"""Records the names of the attempt container and its compose project before either starts."""


def start_environment(
    runtime: TaskRuntime,
    name_hint: str,
    label: str,
    image: str,
    cache_dir: Path | None = None,
    record_names: RecordNames | None = None,
    gateway_port: int | None = None,
) -> Workplace:
    """Environment stage: agent bundles, the container of `image` with the job's environment
    options and the format's settings, sidecars, and the format's preparation. The names are
    chosen first and handed to `record_names`, so that a process killed while starting them
    leaves a record of what to look for. `egress: none` starts the container without a
    network; `egress: llm` behind a fence (see `environments.egress`) that lets it reach the
    model gateway on `gateway_port` and the allowed hosts only."""
    lock = runtime.lock
    check_requests(runtime.gpu_requests())  # before any container of the attempt starts
    options = lock.binding.environment_options
    name = container_name(name_hint)
    compose = runtime.compose_file()
    project = project_name() if compose is not None else None
    if record_names is not None:
        record_names(name, project)
    egress = options.get("egress")
    network = "none" if egress == "none" else options.get("network")
    bundles = role_bundles(profiles(lock), cache_dir=cache_dir)
    base = ContainerSpec(
        image=image,
        name_hint=name_hint,
        name=name,
        network=network,
        user=options.get("user"),
        platform=options.get("platform"),
        labels=((ATTEMPT_LABEL, label),),
        mounts=tuple(bundle.mount for bundle in bundles),
    )
    workdir = runtime.workdir(image)
    spec = runtime.container_spec(base)
    solution = _oracle_solution(runtime)
    if solution is not None:  # in the container's first copy, not one of its own
        spec = dataclasses.replace(spec, seed=(*spec.seed, solution))
    fence = _fence(lock, label, gateway_port)
    if fence is not None:
        spec = fence.behind(spec)
    environment = AttemptEnvironment.start(
        spec,
        lock.task.limits.environment_seconds,
        compose_source=compose,
        compose_project=project,
        prepare=lambda started, deadline: runtime.prepare(started, workdir, deadline),
        fence=fence,
    )
    names = tuple(name for name, _ in spec.environment)
    return Workplace(
        environment=environment,
        workdir=workdir,
        environment_names=names,
        oracle_seeded=solution is not None,
        bundles={bundle.spec.name: bundle.key for bundle in bundles},
    )


def _oracle_solution(runtime: TaskRuntime) -> tuple[str, str] | None:
    """solution/ and where the oracle runs it, when a role is bound to the oracle and the
    format knows that place before the container starts (`TaskRuntime.oracle_seed`)."""
    target = runtime.oracle_seed()
    if target is None:
        return None
    if not any(profile["executor"] == "oracle" for profile in profiles(runtime.lock).values()):
        return None
    from agevalx.agents.oracle import SOLVE_SCRIPT

    source = runtime.task_dir / "solution"
    return (str(source), target) if (source / SOLVE_SCRIPT).is_file() else None


def _fence(lock: TaskLock, label: str, gateway_port: int | None) -> EgressFence | None:
    """The `egress: llm` fence of an attempt (None for other egress): it lets out the bound
    profiles' base_url hosts and `egress_allow`, and relays the gateway on `gateway_port`."""
    options = lock.binding.environment_options
    if options.get("egress") != "llm":
        return None
    allow = allowed_hosts(
        [profile.get("base_url") for profile in profiles(lock).values()],
        options.get("egress_allow") or [],
    )
    return EgressFence.create(
        allow,
        gateway_port=gateway_port,
        outside=options.get("network"),
        labels={ATTEMPT_LABEL: label},
    )


def _refenced(
    lock: TaskLock, container: AttemptContainer, label: str, gateway_port: int | None
) -> EgressFence | None:
    """A re-attached container behind a new fence of this process (the dead one's proxy
    relayed a gateway that is gone, and the reaper removes it): moved off its old networks,
    which are removed when a dead process owned them."""
    fence = _fence(lock, label, gateway_port)
    if fence is not None:
        try:
            move_behind(container.id, fence)
        except BaseException:
            fence.close()
            raise
    return fence


class _Invoker:
    """Runs one invocation through the role's executor; journals it and checkpoints after."""

    def __init__(self, run: _RunState) -> None:
        self.run = run
        self.checkpoint_parent = (
            ("checkpoint", run.checkpoint) if run.checkpoint else ("run", run.node.key)
        )
        self.lock = threading.Lock()
        self._oracle: OracleLayout | None = None
        self._oracle_lock = threading.Lock()
        self.incremental = run.runtime.run_py() is not None
        """List the container's directories at each checkpoint, so that the next one reads
        only what changed. A format's own run body invokes its one agent once: that
        invocation's checkpoint is the container's last, and the listing (an exec) would
        only seed a checkpoint that never comes."""

    def oracle(self) -> OracleLayout:
        """The format's oracle layout; `seeded` for the attempt's first oracle invocation
        when the run stage copied solution/ in as the container started."""
        with self._oracle_lock:
            if self._oracle is None:
                self._oracle = self.run.runtime.oracle(self.run.container, self.run.workdir)
            layout = self._oracle
            if self.run.oracle_seeded:
                self.run.oracle_seeded = False
                return dataclasses.replace(layout, seeded=True)
            return layout

    def __call__(self, role: str, prompt: str, index: int) -> InvocationResult:
        run = self.run
        profile = run.routes.profile(role, profiles(run.lock)[role])
        executor = run.executors.get(profile["executor"])
        if executor is None:
            raise AgevalError("executor_unavailable", f"no {profile['executor']} executor")
        environ = {**run.runtime.agent_environment(), **_agent_environment(profile)}

        invocation = Invocation(
            role=role,
            prompt=prompt,
            profile=profile,
            container=Container(
                id=run.container.id,
                workdir=run.workdir,
                home=HOME,
                private=PRIVATE,
                image=run.container.image,
                bundles=run.bundles,
            ),
            deadline=run.quotas.deadline,
            record=run.journal.recorder(role, index),
            transcript=run.transcript,
            environ=run.routes.environ(role, environ),
            task_dir=str(run.task_dir),
            oracle=self.oracle() if profile["executor"] == "oracle" else None,
        )
        run.transcript(
            {
                "type": "prompt",
                "role": role,
                "invocation": index,
                "text": run.journal.redactor.text(prompt),
            }
        )
        try:
            result = executor.invoke(invocation)
        except WallTimeExceeded:
            run.routes.check(role, out_of_time=True)
            raise QuotaExhausted("wall_time_seconds") from None
        except AgentError as exc:
            run.routes.check(role)
            _check_alive(run.container, exc)
            raise AgevalError(exc.code, exc.message, hint=exc.stderr_tail[-800:] or None) from None
        run.routes.check(role)
        # an invocation cut short by a lost container is neither journalled nor checkpointed:
        # a retry runs it again
        _check_alive(run.container, None, killed=result.exit_code in KILLED_EXITS)
        entry = run.journal.append(
            "invocation",
            role=role,
            invocation=index,
            exit_code=result.exit_code,
            output=result.output,
            detail={"stop_reason": result.stop_reason, "usage": result.usage},
        )
        self.checkpoint(entry.model_dump(mode="json", exclude={"time"}))
        return result

    def checkpoint(self, step: dict[str, Any]) -> None:
        run = self.run
        with self.lock:
            taken = snapshot(run.container, run.store, run.roots, incremental=self.incremental)
            key = store_checkpoint(run.store, self.checkpoint_parent, step, taken)
            self.checkpoint_parent = ("checkpoint", key)
            detail: dict[str, Any] = {
                "key": key,
                "workspace": taken.workspace,
                "home": taken.home,
                "bytes": taken.size,
            }
            if run.routes.log is not None:  # what a resume keeps of model.jsonl
                detail["model_lines"] = run.routes.log.lines
            record = run.journal.append(
                "checkpoint", invocation=step.get("invocation"), detail=detail
            )
            run.latest = (record.seq + 1, taken)


def _agent_environment(profile: dict[str, Any]) -> dict[str, str]:
    environ: dict[str, str] = {}
    if profile.get("api_key"):
        environ["AGEVAL_API_KEY"] = resolve_reference(profile["api_key"])
    if profile.get("base_url"):
        environ["AGEVAL_BASE_URL"] = profile["base_url"]
    if (profile.get("model") or {}).get("id"):
        environ["AGEVAL_MODEL"] = profile["model"]["id"]
    return environ


@dataclass
class _RunState:
    node: Node
    runtime: TaskRuntime
    container: AttemptContainer
    workdir: str
    journal: ActivityJournal
    quotas: Quotas
    store: CacheStore
    executors: dict[str, Executor]
    replayer: Replayer = field(default_factory=lambda: Replayer([]))
    checkpoint: str | None = None
    """Key of the last checkpoint taken before this process (resume), if any."""
    transcript_lines: list[dict[str, Any]] = field(default_factory=list)
    routes: AttemptRoutes = field(default_factory=AttemptRoutes.none)
    """The attempt's model gateway routes."""
    latest: tuple[int, Snapshot] | None = None
    """The last checkpoint this process took: the journal's length just after it, and its
    snapshot."""
    oracle_seeded: bool = False
    """The oracle's solution/ is in the container already: its first invocation copies
    nothing (`OracleLayout.seeded`)."""
    bundles: Mapping[str, str] = field(default_factory=dict)
    """The agent bundles mounted at the container's start (`Workplace.bundles`)."""

    @property
    def lock(self) -> TaskLock:
        return self.runtime.lock

    @property
    def task_dir(self) -> Path:
        return self.runtime.task_dir

    @property
    def roots(self) -> SnapshotRoots:
        return self.runtime.snapshot_roots(self.workdir)

    def transcript(self, entry: dict[str, Any]) -> None:
        self.transcript_lines.append(entry)


LOST = "environment_lost"
LOST_GRACE = 3.0
"""Seconds a failed invocation's container gets to be seen stopped by the engine."""
KILLED_EXITS = frozenset({126, 137, 143})
"""Exit codes of an invocation whose process was killed (or could not start), as when its
container goes: its container gets `LOST_GRACE` to be seen stopped."""


def _check_alive(
    container: AttemptContainer, cause: BaseException | None, *, killed: bool = False
) -> None:
    """`environment_lost` when the attempt container no longer runs: killed or removed from
    outside (ageval stops it only after the run stage), whatever the agent then said."""
    # an agent cut off by its container's kill can report before the engine marks the
    # container stopped: give an error's cause a moment to show
    if not container.lost(LOST_GRACE if cause is not None or killed else 0.0):
        return  # running, or the agent stopped it: the attempt counts
    raise AgevalError(
        LOST,
        "the attempt container stopped or was removed while the run stage ran"
        + (f" ({type(cause).__name__}: {cause})" if cause is not None else ""),
        hint="not the agent's fault: ageval run --retry-infra continues the attempt from its "
        "last checkpoint",
    )


def _run_body(state: _RunState) -> Any:
    """run.py in its harness container (`runner.sandbox`), unless the job trusts it
    (`--trust-run-py`) or the format runs its own default body. Whatever plans a run node
    without saying (a replay, a fork's branch) gets the sandbox."""
    if state.runtime.run_py() is None or state.node.payload.get("run_py") == "trusted":
        return state.runtime.run_body()
    from agevalx.runner.sandbox import sandboxed_run

    return sandboxed_run(state.task_dir, attempt_id(state.node))


def run_stage(state: _RunState) -> str | None:
    """Execute the run body within the wall time; returns the exhausted quota's key, if any."""
    ctx = RunContext(
        task_dir=state.task_dir,
        params=dict(state.lock.task.parameters),
        roles=list(state.lock.binding.roles),
        container=state.container,
        journal=state.journal,
        quotas=state.quotas,
        invoker=_Invoker(state),
        replayer=state.replayer,
        workdir=state.workdir,
    )
    body = _run_body(state)
    outcome: dict[str, BaseException] = {}

    def target() -> None:
        try:
            body(ctx)
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=target, name=f"run {state.node.id}", daemon=True)
    worker.start()
    worker.join(max(0.0, state.quotas.remaining()) + 5.0)
    if worker.is_alive():
        ctx.closed = True
        return "wall_time_seconds"
    error = outcome.get("error")
    if error is None or not (isinstance(error, AgevalError) and error.code == LOST):
        _check_alive(state.container, error)  # ageval stops it only after this stage
    if error is None:
        return None
    if isinstance(error, QuotaExhausted):
        return error.key
    if isinstance(error, AgevalError):
        raise error
    detail = "".join(traceback.format_exception(error))[-1500:]
    raise AgevalError(
        "run_py_failed", f"run.py raised {type(error).__name__}: {error}", hint=detail
    ) from None


def _reattachable(
    previous: AttemptRecord | None, point: ResumePoint | None, runtime: TaskRuntime
) -> AttemptContainer | None:
    """The interrupted attempt's container, when it still runs and matches the journal.

    Never the container of an earlier try in this process (a retry of an infrastructure
    failure): that try closed its environment, and its removal may still be under way in the
    background, so the retry starts a fresh environment from the last checkpoint."""
    existing = find_container(previous.container_id) if previous else None
    if existing is None:
        return None
    assert previous is not None
    if previous.pid == os.getpid() and previous.process_start == this_process().start:
        existing.remove()
        return None
    usable = point is not None and point.aligned and runtime.compose_file() is None
    if usable and existing.running():
        return existing
    existing.remove()
    return None


def _fresh_environment(
    node: Node,
    context: ExecutionContext,
    runtime: TaskRuntime,
    point: ResumePoint | None,
    record_names: RecordNames,
    gateway_port: int | None,
) -> Workplace:
    """A new environment, with the last checkpoint (if any) restored into it; or, for a fork
    of a task whose checkpoints do not hold all the verifier reads, a container of the
    source's committed image (see `operations.recovery.fork_image`)."""
    image, checkpoint = image_reference(context, node), point.checkpoint if point else None
    fork = node.payload.get("fork")
    if fork is not None and fork.get("image"):
        image, checkpoint = _forked_image(str(fork["image"]), str(fork["source"])), None
    place = start_environment(
        runtime,
        f"{node.task_id}-{node.attempt}",
        attempt_id(node),
        image,
        context.store.root,
        record_names,
        gateway_port,
    )
    if checkpoint:
        try:
            roots = runtime.snapshot_roots(place.workdir)
            restore(
                place.container, context.store, checkpoint["workspace"], checkpoint["home"], roots
            )
        except BaseException:
            place.environment.close()
            raise
    return place


def _forked_image(image: str, source: str) -> str:
    if not image_exists(image):
        raise EnvironmentFailure(
            "run_image_missing",
            f"the committed image of attempt {source} ({image}) is gone from this Docker "
            "engine, so a fork cannot start from everything its agent left",
            field="--fork",
            hint="fork on the engine that ran the attempt, or run the source again",
        )
    return image


def _final_snapshot(state: _RunState, limit: str | None) -> Snapshot:
    """The snapshot after the run stage. When the run body returned on its own and nothing
    was journaled since this process's last checkpoint (the usual end: the last invocation
    and its checkpoint), every agent had stopped and nothing touched the container since, so
    that checkpoint's snapshot is the final one and no listing is taken again."""
    latest = state.latest
    if limit is None and latest is not None and latest[0] == state.journal.sequence:
        return latest[1]
    return snapshot(state.container, state.store, state.roots)


def _collect_artifacts(
    runtime: TaskRuntime, container: AttemptContainer, workdir: str, store: CacheStore
) -> str:
    """The format's artifacts of the finished run stage, stored as a tree; its digest."""
    with tempfile.TemporaryDirectory(prefix="ageval-artifacts-") as scratch:
        into = Path(scratch) / "artifacts"
        into.mkdir()
        runtime.collect_artifacts(container, workdir, into)
        return store.put_tree(into).digest


def _empty_tree(store: CacheStore) -> str:
    with tempfile.TemporaryDirectory(prefix="ageval-empty-") as scratch:
        return store.put_tree(Path(scratch)).digest


@node_executor("run")
def execute_run(node: Node, context: ExecutionContext) -> NodeResult:
    """Environment stage + run stage of one attempt; stores activity and final snapshots.

    With `node.payload["resume"]`, an interrupted attempt continues from its journal. Roles
    with a model `base_url` talk to it through the process's model gateway (`gateway`); with
    `node.payload["model_traffic"]` (a `TrafficReplay`), the gateway answers them from that
    recording instead (`ageval replay --model-traffic`); a resumed attempt's gateway answers
    the redone invocation's requests from its own cut-short traffic while they match it.
    """
    assert node.task_id is not None and node.attempt is not None
    lock = task_lock(context, node.task_id)
    prefetch_executors({bound.executor for bound in lock.binding.roles.values()})
    with contextlib.ExitStack() as stack:
        routes = AttemptRoutes.none()
        if any(profile.get("base_url") for profile in profiles(lock).values()):
            from agevalx.gateway.server import shared_gateway  # aiohttp: only runs with a model

            gateway = stack.enter_context(shared_gateway())
            runtime = dataset_of(context.plan).runtime(lock)
            directory = attempt_dir(context.plan.dataset.root, attempt_id(node))
            log = TrafficLog(directory / MODEL_TRAFFIC, Redactor(runtime.secret_values()))
            replay = node.payload.get("model_traffic")
            if replay is None and node.payload.get("resume"):  # the cut-short traffic answers
                replay = ResumedTraffic(directory / ABANDONED_TRAFFIC, log.redactor)
            budget = node.payload.get("job_budget")
            routes = AttemptRoutes(gateway, profiles(lock), log, replay, budget)
            stack.callback(routes.close)
        try:
            return _run_attempt(node, context, lock, routes)
        except AgevalError as exc:  # the usage counted so far goes into result.json too
            raise with_usage(exc, agent_usage(lock, routes)) from None
        except Exception as exc:
            if not routes.routes:
                raise
            failure = AgevalError("node_failed", f"{type(exc).__name__}: {exc}")
            raise with_usage(failure, agent_usage(lock, routes)) from None


def agent_usage(lock: TaskLock, routes: AttemptRoutes) -> dict[str, dict[str, Any]]:
    """The agents' usage per role; the LLM judge's role (`evaluation.judge`) only if the run
    stage itself talked to its model (its evaluation counts its own)."""
    judge = lock.task.evaluation.judge
    return {
        role: usage
        for role, usage in routes.summary().items()
        if role != judge or usage["requests"] or usage["retries"]
    }


def _run_attempt(
    node: Node, context: ExecutionContext, lock: TaskLock, routes: AttemptRoutes
) -> NodeResult:
    assert node.task_id is not None and node.attempt is not None
    runtime = dataset_of(context.plan).runtime(lock)
    directory = attempt_dir(context.plan.dataset.root, attempt_id(node))
    previous = read_attempt(directory) if node.payload.get("resume") else None
    if previous is None:
        shutil.rmtree(directory, ignore_errors=True)
    journal = ActivityJournal(directory / "activity.jsonl", Redactor(runtime.secret_values()))
    point = resume_point(journal, previous) if previous else None
    fork = node.payload.get("fork")
    if fork is not None:  # a fork starts from the source's steps up to its checkpoint
        point = ResumePoint(completed=list(fork["records"]), abandoned=[], spent_seconds=0.0)
    reattached = _reattachable(previous, point, runtime)
    if point is not None and reattached is None:
        # a fork asks for its cut (one of a Harbor task starts from the source's image)
        whole = fork is not None or runtime.dataset.checkpoints_hold_state()
        point = point.back_to_checkpoint() if whole else point.back_to_start()
    if point is not None:
        set_aside(journal, point)
    record = AttemptRecord(
        attempt_id=attempt_id(node),
        task_id=node.task_id,
        attempt=node.attempt,
        run_key=node.key,
        config_digest=lock.config_digest,
        host=socket.gethostname(),
        pid=os.getpid(),
        process_start=this_process().start,
        container_id=previous.container_id if previous else None,
        container_name=previous.container_name if previous else None,
        spent_seconds=point.spent_seconds if point else 0.0,
        keep_recovery_state=bool(node.payload.get("keep_recovery_state"))
        or bool(previous and previous.keep_recovery_state),
    )
    write_attempt(directory, record)
    clock = StageClock()
    started = time.monotonic()
    if reattached is not None:
        image = image_reference(context, node)
        names = runtime.container_spec(ContainerSpec(image=image, name_hint="")).environment
        fence = _refenced(lock, reattached, attempt_id(node), routes.gateway_port)
        place = Workplace(
            AttemptEnvironment(container=reattached, fence=fence),
            runtime.workdir(image),
            tuple(name for name, _ in names),
        )
    else:

        def record_names(name: str, project: str | None) -> None:
            record.container_id = None
            record.container_name, record.compose_project = name, project
            write_attempt(directory, record)

        place = _fresh_environment(node, context, runtime, point, record_names, routes.gateway_port)
    container = place.container
    record.container_id, record.run_started = container.id, time.time()
    write_attempt(directory, record)
    clock.add("environment", started)
    scoring_network = runtime.scoring_network()
    if scoring_network is not None:  # its namespace starts while the run stage runs
        standby().expect(scoring_network)
    try:
        state = _RunState(
            node=node,
            runtime=runtime,
            container=container,
            workdir=place.workdir,
            journal=journal,
            quotas=Quotas(
                deadline=time.monotonic() + runtime.wall_time_seconds() - record.spent_seconds,
                invocations_allowed=lock.task.limits.agent_invocations,
                concurrency=threading.Semaphore(lock.task.limits.agent_concurrency),
                invocations_used=point.invocations_used if point else 0,
            ),
            store=context.store,
            executors=executors(),
            replayer=Replayer.from_point(point),
            checkpoint=(point.checkpoint or {}).get("key") if point else None,
            routes=routes,
            oracle_seeded=place.oracle_seeded,
            bundles=place.bundles,
        )
        started = time.monotonic()
        pending = point.unsnapshotted() if point else None
        if pending is not None:  # died while checkpointing a finished invocation: take it now
            catch_up = _Invoker(state)
            catch_up.checkpoint(pending.model_dump(mode="json", exclude={"time"}))
            state.checkpoint = catch_up.checkpoint_parent[1]
        limit = run_stage(state)
        if limit is not None:
            journal.append("limit", detail={"key": limit})
        clock.add("run", started)
        final = _final_snapshot(state, limit)
        artifacts = _collect_artifacts(runtime, container, place.workdir, context.store)
        collected, collect_failure = collect(
            place.environment,
            lock.task.evaluation.collect,
            lock.task.limits.evaluate_seconds,
            context.store,
        )
        committed, committed_id = container.commit(
            COMMITTED_REPOSITORY,
            blank=place.environment_names,
            labels=image_labels(context.store),
            pause=limit is not None,  # an agent the wall time cut off may still be writing
        )
    except BaseException:
        if scoring_network is not None:
            standby().withdraw(scoring_network)
        raise
    finally:
        place.environment.close_later()  # committed: its removal overlaps with what follows
    transcript = b"".join(canonical_json(line) + b"\n" for line in state.transcript_lines)
    with context.store.in_use():
        outputs = {
            "activity": OutputRef(digest=context.store.put_file(journal.path), type="blob"),
            "transcript": OutputRef(digest=context.store.put_bytes(transcript), type="blob"),
            "workspace": OutputRef(digest=final.workspace, type="tree"),
            "home": OutputRef(digest=final.home, type="tree"),
            "artifacts": OutputRef(digest=artifacts, type="tree"),
            "collected": OutputRef(digest=collected or _empty_tree(context.store), type="tree"),
        }
        traffic = routes.log.path if routes.log is not None else None
        if traffic is not None and traffic.is_file():
            outputs["model"] = OutputRef(digest=context.store.put_file(traffic), type="blob")
        else:
            outputs["model"] = OutputRef(digest=context.store.put_bytes(b""), type="blob")
    output = RunOutput(
        attempt_id=attempt_id(node),
        limit=limit,
        invocations=state.quotas.invocations_used,
        seconds=clock.seconds,
        committed_image=committed,
        committed_image_id=committed_id,
        workdir=place.workdir,
        workspace_root=state.roots.workspace,
        collect_failure=collect_failure,
        forked_from=(
            {"attempt_id": fork["source"], "checkpoint": fork["checkpoint"]} if fork else None
        ),
        model_usage=agent_usage(lock, routes),
        model_reused=routes.reused(),
    )
    return NodeResult(outputs=outputs, meta=output.meta())
