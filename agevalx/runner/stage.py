"""The run node's executor: environment stage, then run stage, then the final snapshot."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import shutil
import socket
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agevalx.agents.base import (
    AgentError,
    Container,
    Executor,
    Invocation,
    InvocationResult,
    WallTimeExceeded,
)
from agevalx.agents.bundles import container_mounts
from agevalx.cache.manifest import OutputRef
from agevalx.config.loading import read_yaml_mapping
from agevalx.config.secrets import resolve_reference
from agevalx.environments.attempt import AttemptEnvironment
from agevalx.environments.compose import compose_file
from agevalx.environments.container import (
    ATTEMPT_LABEL,
    AttemptContainer,
    ContainerSpec,
    find_container,
)
from agevalx.errors import AgevalError
from agevalx.graph.execute import ExecutionContext, NodeResult
from agevalx.graph.nodes import Node
from agevalx.hashing import canonical_json
from agevalx.images.build import image_reference
from agevalx.results.paths import attempt_dir, attempt_id
from agevalx.runner.activity import ActivityJournal
from agevalx.runner.context import QuotaExhausted, Quotas, RunContext
from agevalx.runner.recovery import (
    AttemptRecord,
    Replayer,
    ResumePoint,
    read_attempt,
    resume_point,
    set_aside,
    write_attempt,
)
from agevalx.runner.snapshot import restore, snapshot, store_checkpoint

COMMITTED_REPOSITORY = "ageval/run"


class _Executors(dict[str, Executor]):
    """Agent executors by kind, each imported on first use."""

    def get(self, kind: str, default: Executor | None = None) -> Executor | None:  # type: ignore[override]
        if kind not in self:
            if kind == "oracle":
                from agevalx.agents.oracle import OracleExecutor

                self[kind] = OracleExecutor()
            elif kind == "acp":
                from agevalx.agents.acp import AcpExecutor

                self[kind] = AcpExecutor()
            else:
                return default
        return self[kind]


def executors() -> dict[str, Executor]:
    return _Executors()


@dataclass
class StageClock:
    """Seconds spent per stage."""

    seconds: dict[str, float] = field(default_factory=dict)

    def add(self, stage: str, started: float) -> None:
        self.seconds[stage] = round(self.seconds.get(stage, 0.0) + time.monotonic() - started, 3)


def _container_spec(node: Node, lock: dict[str, Any], image: str) -> ContainerSpec:
    options = lock["binding"]["environment_options"]
    parameters = lock["task"]["parameters"]
    return ContainerSpec(
        image=image,
        name_hint=f"{node.task_id}-{node.attempt}",
        network=options.get("network"),
        network_mode=parameters.get("network_mode") or options.get("network_mode"),
        user=options.get("user"),
        cpus=parameters.get("cpus"),
        memory_mb=parameters.get("memory_mb"),
        gpus=parameters.get("gpus"),
        platform=options.get("platform"),
        labels=((ATTEMPT_LABEL, attempt_id(node)),),
    )


def _unlocked_settings(
    task_dir: Path, profiles: Path | None
) -> tuple[tuple[str, ...], dict[str, str]]:
    """cap_add and main_environment: read at run time, never locked (they may hold secrets)."""
    document = read_yaml_mapping(task_dir / "task.yaml", display="task.yaml")
    parameters = document.get("parameters") or {}
    cap_add = tuple(parameters.get("cap_add") or ())
    environment = dict(parameters.get("main_environment") or {})
    if profiles is not None and profiles.is_file():
        options = read_yaml_mapping(profiles, display="profiles.yaml").get("environment_options")
        if isinstance(options, dict):
            cap_add += tuple(options.get("cap_add") or ())
            environment = {**dict(options.get("main_environment") or {}), **environment}
    return cap_add, {str(k): str(v) for k, v in environment.items()}


def start_environment(
    node: Node,
    lock: dict[str, Any],
    task_dir: Path,
    image: str,
    profiles: Path | None,
    cache_dir: Path | None = None,
) -> AttemptEnvironment:
    """Environment stage: agent bundles, sidecars, container, task data, setup.sh."""
    cap_add, environment = _unlocked_settings(task_dir, profiles)
    spec = dataclasses.replace(
        _container_spec(node, lock, image),
        cap_add=cap_add,
        environment=tuple(environment.items()),
        mounts=container_mounts(lock["binding"]["roles"], cache_dir=cache_dir),
    )
    return AttemptEnvironment.start(spec, task_dir, lock["task"]["limits"]["environment_seconds"])


class _Invoker:
    """Runs one invocation through the role's executor; journals it and checkpoints after."""

    def __init__(self, run: _RunState) -> None:
        self.run = run
        self.checkpoint_parent = (
            ("checkpoint", run.checkpoint) if run.checkpoint else ("run", run.node.key)
        )
        self.lock = threading.Lock()

    def __call__(self, role: str, prompt: str, index: int) -> InvocationResult:
        run = self.run
        profile = run.lock["binding"]["roles"][role]
        executor = run.executors.get(profile["executor"])
        if executor is None:
            raise AgevalError("executor_unavailable", f"no {profile['executor']} executor")

        invocation = Invocation(
            role=role,
            prompt=prompt,
            profile=profile,
            container=Container(id=run.container.id),
            deadline=run.quotas.deadline,
            record=run.journal.recorder(role, index),
            transcript=run.transcript,
            environ=_agent_environment(profile),
            task_dir=str(run.task_dir),
        )
        try:
            result = executor.invoke(invocation)
        except WallTimeExceeded:
            raise QuotaExhausted("wall_time_seconds") from None
        except AgentError as exc:
            raise AgevalError(exc.code, exc.message, hint=exc.stderr_tail[-800:] or None) from None
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
            taken = snapshot(run.container, run.store)
            key = store_checkpoint(run.store, self.checkpoint_parent, step, taken)
            self.checkpoint_parent = ("checkpoint", key)
            run.journal.append(
                "checkpoint",
                invocation=step.get("invocation"),
                detail={
                    "key": key,
                    "workspace": taken.workspace,
                    "home": taken.home,
                    "bytes": taken.size,
                },
            )


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
    lock: dict[str, Any]
    task_dir: Path
    container: AttemptContainer
    journal: ActivityJournal
    quotas: Quotas
    store: Any
    executors: dict[str, Executor]
    replayer: Replayer = field(default_factory=lambda: Replayer([]))
    checkpoint: str | None = None
    """Key of the last checkpoint taken before this process (resume), if any."""
    transcript_lines: list[dict[str, Any]] = field(default_factory=list)

    def transcript(self, entry: dict[str, Any]) -> None:
        self.transcript_lines.append(entry)


def _load_run_py(task_dir: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"ageval_run_{id(task_dir)}", task_dir / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.run


def _default_run(ctx: RunContext) -> None:
    role = ctx.roles[0]
    prompt_file = ctx.task_file("prompts/task.md")
    ctx.invoke(role, prompt_file.read_text(encoding="utf-8") if prompt_file.is_file() else "")


def run_stage(state: _RunState) -> str | None:
    """Execute run.py within wall_time_seconds; returns the exhausted quota's key, if any."""
    roles = list(state.lock["binding"]["roles"])
    ctx = RunContext(
        task_dir=state.task_dir,
        params=state.lock["task"]["parameters"],
        roles=roles,
        container=state.container,
        journal=state.journal,
        quotas=state.quotas,
        invoker=_Invoker(state),
        replayer=state.replayer,
    )
    body = _load_run_py(state.task_dir) if state.lock["features"]["run_py"] else _default_run
    outcome: dict[str, BaseException] = {}

    def target() -> None:
        try:
            body(ctx)
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=target, name=f"run.py {state.node.id}", daemon=True)
    worker.start()
    worker.join(max(0.0, state.quotas.remaining()) + 5.0)
    if worker.is_alive():
        ctx.closed = True
        return "wall_time_seconds"
    error = outcome.get("error")
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
    previous: AttemptRecord | None, point: ResumePoint | None, task_dir: Path
) -> AttemptContainer | None:
    """The interrupted attempt's container, when it still runs and matches the journal."""
    existing = find_container(previous.container_id) if previous else None
    if existing is None:
        return None
    usable = point is not None and point.aligned and compose_file(task_dir) is None
    if usable and existing.running():
        return existing
    existing.remove()
    return None


def _fresh_environment(
    node: Node, context: ExecutionContext, lock: dict[str, Any], point: ResumePoint | None
) -> AttemptEnvironment:
    """A new environment, with the last checkpoint (if any) restored into it."""
    task_dir = context.plan.dataset.task_dir(str(node.task_id))
    image = image_reference(context, node)
    environment = start_environment(
        node, lock, task_dir, image, context.plan.profiles_path, context.store.root
    )
    checkpoint = point.checkpoint if point else None
    if checkpoint:
        try:
            snapshots = (checkpoint["workspace"], checkpoint["home"])
            restore(environment.container, context.store, *snapshots)
        except BaseException:
            environment.close()
            raise
    return environment


def execute_run(node: Node, context: ExecutionContext) -> NodeResult:
    """Environment stage + run stage of one attempt; stores activity and final snapshots.

    With `node.payload["resume"]`, an interrupted attempt continues from its journal.
    """
    assert node.task_id is not None and node.attempt is not None
    lock: dict[str, Any] = context.plan.node(f"lock:{node.task_id}").payload["lock"]
    if lock["features"].get("harbor"):
        from agevalx.harbor.nodes import execute_harbor_run

        return execute_harbor_run(node, context)
    task_dir = context.plan.dataset.task_dir(node.task_id)
    directory = attempt_dir(context.plan.dataset.root, attempt_id(node))
    previous = read_attempt(directory) if node.payload.get("resume") else None
    if previous is None:
        shutil.rmtree(directory, ignore_errors=True)
    journal = ActivityJournal(directory / "activity.jsonl")
    point = resume_point(journal, previous) if previous else None
    fork = node.payload.get("fork")
    if fork is not None:  # a fork starts from the source's steps up to its checkpoint
        point = ResumePoint(completed=list(fork["records"]), abandoned=[], spent_seconds=0.0)
    reattached = _reattachable(previous, point, task_dir)
    if point is not None and reattached is None:
        point = point.back_to_checkpoint()
    if point is not None:
        set_aside(journal, point)
    record = AttemptRecord(
        attempt_id=attempt_id(node),
        task_id=node.task_id,
        attempt=node.attempt,
        run_key=node.key,
        config_digest=lock["config_digest"],
        host=socket.gethostname(),
        pid=os.getpid(),
        container_id=previous.container_id if previous else None,
        spent_seconds=point.spent_seconds if point else 0.0,
    )
    write_attempt(directory, record)
    clock = StageClock()
    started = time.monotonic()
    if reattached is not None:
        environment = AttemptEnvironment(container=reattached)
    else:
        environment = _fresh_environment(node, context, lock, point)
    container = environment.container
    record.container_id, record.run_started = container.id, time.time()
    write_attempt(directory, record)
    clock.add("environment", started)
    try:
        limits = lock["task"]["limits"]
        state = _RunState(
            node=node,
            lock=lock,
            task_dir=task_dir,
            container=container,
            journal=journal,
            quotas=Quotas(
                deadline=time.monotonic() + limits["wall_time_seconds"] - record.spent_seconds,
                invocations_allowed=limits.get("agent_invocations"),
                concurrency=threading.Semaphore(limits["agent_concurrency"]),
                invocations_used=point.invocations_used if point else 0,
            ),
            store=context.store,
            executors=executors(),
            replayer=Replayer.from_point(point),
            checkpoint=(point.checkpoint or {}).get("key") if point else None,
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
        final = snapshot(container, context.store)
        committed = container.commit(COMMITTED_REPOSITORY, node.key)
    finally:
        environment.close()
    transcript = b"".join(canonical_json(line) + b"\n" for line in state.transcript_lines)
    with context.store.in_use():
        outputs = {
            "activity": OutputRef(digest=context.store.put_file(journal.path), type="blob"),
            "transcript": OutputRef(digest=context.store.put_bytes(transcript), type="blob"),
            "workspace": OutputRef(digest=final.workspace, type="tree"),
            "home": OutputRef(digest=final.home, type="tree"),
        }
    return NodeResult(
        outputs=outputs,
        meta={
            "attempt_id": attempt_id(node),
            "limit": limit,
            "invocations": state.quotas.invocations_used,
            "seconds": clock.seconds,
            "committed_image": f"{COMMITTED_REPOSITORY}:{node.key}",
            "committed_image_id": committed,
            "forked_from": (
                {"attempt_id": fork["source"], "checkpoint": fork["checkpoint"]} if fork else None
            ),
        },
    )
