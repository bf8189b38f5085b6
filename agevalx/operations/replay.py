"""`ageval replay`: re-execute an attempt's recorded terminal actions in a new environment.

No model is called. The new environment is built from the task's initial configuration; the
recorded commands (run.py's `exec`, the agent's terminal/* requests, commands the agent ran
with its own tools) are run in order and compared with the recording: exit code and output
digest. The report names the first divergence. With `evaluate`, the evaluator scores the
replayed outputs; otherwise a finished replay is neither PASS nor FAIL. The source attempt is
not changed, and a replay is never counted in pass@k.

A replay is a `replay` node of the graph (rules/replay.yaml), a branch whose parents are the
source's run node, its last checkpoint and the task image. Its report and activity are stored
in the cache; the same replay asked again is reused (`fresh` recomputes it), and
`.ageval/runs/<replay id>/` is written from the cache.

With `model_traffic` (`--model-traffic`), the replay re-runs the attempt's agent itself (run.py
and the real agent process) in a new environment, with the model gateway answering every
request from the source's `model.jsonl` (see `agevalx.gateway.replaying`): no model is
contacted. The terminal actions of the re-run are then compared with the source's, step by
step, and the first model request the recording did not answer is the model divergence.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agevalx.cache.manifest import ActionManifest, OutputRef
from agevalx.cache.store import CacheStore
from agevalx.environments.container import (
    WORKSPACE,
    interrupt_session,
    remove_session_containers,
    reopen_session,
)
from agevalx.environments.engine import remove_image
from agevalx.environments.owners import ReapReport, reap_orphans
from agevalx.errors import AgevalError, UsageError
from agevalx.evaluation.evaluate import masked
from agevalx.evaluation.result import EvaluationResult
from agevalx.evaluation.session import RunFacts, ScoringSession
from agevalx.formats.base import FormatOptions, TaskRuntime, dataset_of
from agevalx.fsutil import atomic_write
from agevalx.gateway.recording import MODEL_TRAFFIC
from agevalx.gateway.replaying import ModelDivergence, TrafficReplay
from agevalx.graph.context import ExecutionContext, NodeResult
from agevalx.graph.execute import execute
from agevalx.graph.keys import node_key
from agevalx.graph.nodes import Node
from agevalx.graph.plan import Plan
from agevalx.graph.registry import node_executor
from agevalx.graph.rules import load_rules
from agevalx.hashing import digest_bytes, digest_json
from agevalx.images.build import (
    image_labels,
    image_reference,
    reference_of,
    revalidate_images,
)
from agevalx.lockfile.node import task_lock
from agevalx.lockfile.request import BindingRequest
from agevalx.operations.lineage import Branch, record_branch, source_run_key
from agevalx.operations.planning import PlanRequest, plan
from agevalx.operations.recovery import source_binding, source_lock
from agevalx.redaction import Redactor
from agevalx.results.paths import attempt_dir, attempt_id
from agevalx.runner.activity import ActivityJournal, ActivityRecord
from agevalx.runner.stage import execute_run, start_environment

KIND = "replay"
REPLAY_FILE = "replay.json"
ACTIVITY_FILE = "activity.jsonl"
REPLAY_REPOSITORY = "ageval/replay"
"""Where a replay commits its final state to score it (removed after)."""
Outcome = Literal["computed", "reused"]


@dataclass(frozen=True)
class RecordedCommand:
    """A terminal action of the source attempt."""

    seq: int
    command: str
    cwd: str
    exit_code: int | None
    output: str | None


class Divergence(BaseModel):
    """The first step whose replay differs from the recording."""

    model_config = ConfigDict(extra="forbid")

    step: int
    """Index of the step in the replay (0-based)."""
    source_seq: int
    """Its record's seq in the source attempt's activity.jsonl."""
    command: str
    """The command."""
    expected_exit_code: int | None
    """Exit code recorded by the source."""
    actual_exit_code: int
    """Exit code of the replay."""
    expected_output_digest: str | None
    """xxh3-128 of the recorded output (its last 64 KiB)."""
    actual_output_digest: str
    """xxh3-128 of the replayed output (its last 64 KiB)."""


class ReplayReport(BaseModel):
    """`replay.json`."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["ageval.replay/1"] = "ageval.replay/1"
    """Format version."""
    source_attempt: str
    """The replayed attempt (unchanged)."""
    replay_id: str
    """This replay's id, `<task>-replay-<first 12 hex of its key>`; its evidence is under
    .ageval/runs/<replay_id>/."""
    key: str
    """The replay node's key."""
    source_run_key: str | None = None
    """The source attempt's run node key (a parent of the replay node)."""
    checkpoint_seq: int | None = None
    """Seq of the source's last checkpoint in its activity.jsonl; None when it took none."""
    checkpoint_key: str | None = None
    """That checkpoint node's key (a parent of the replay node)."""
    status: Literal["matched", "diverged"]
    """`matched`: every step's exit code and output matched; `diverged`: see below."""
    steps: int
    """Commands re-executed."""
    first_divergence: Divergence | None = None
    """The first differing step."""
    divergences: int = 0
    """How many steps differed."""
    evidence: str
    """Directory with the replay's activity.jsonl and this report (in the cache: relative to
    the dataset root; in the view and the command's output: that directory's path)."""
    evaluation: dict[str, Any] | None = None
    """With --evaluate: the evaluator's status, score and details on the replayed outputs."""
    counted_in_pass_at_k: bool = False
    """Replays never count in pass@k."""
    seconds: float = Field(default=0.0)
    """Wall time of the replay when it was computed."""
    model_traffic: bool = False
    """With --model-traffic: the agent itself was re-run, answered by the recorded model
    traffic; `steps` are then the re-run's terminal actions compared with the source's."""
    model_requests: int = 0
    """With --model-traffic: the model requests the recording answered."""
    model_divergence: ModelDivergence | None = None
    """With --model-traffic: the first model request the recording did not answer (the
    re-run's agent got an error carrying its code there)."""


@dataclass(frozen=True)
class ReplaySource:
    """What a replay re-executes, and the nodes it grows from."""

    attempt: str
    task: str
    commands: list[RecordedCommand]
    run_key: str | None
    """The source attempt's run node key."""
    checkpoint: ActivityRecord | None
    """The source's last checkpoint record."""
    traffic: Path | None = None
    """The source's recorded model traffic (`model.jsonl`), when it has one."""

    def actions_digest(self) -> str:
        """The digest of the recorded commands (what the replay re-executes and compares)."""
        return digest_json([asdict(command) for command in self.commands])


@dataclass
class ReplayOutcome:
    """The replay's report, and whether this call computed it or reused it from the cache."""

    report: ReplayReport
    outcome: Outcome
    node: Node
    reaped: ReapReport = field(default_factory=ReapReport)
    """What dead ageval processes of this host had left in Docker, removed first."""


def _recorded_commands(records: list[ActivityRecord]) -> list[RecordedCommand]:
    """One entry per command, with the exit code and output the source recorded for it."""
    results: dict[str, ActivityRecord] = {}
    for record in records:
        terminal = record.detail.get("terminal_id")
        if record.type == "terminal" and terminal and record.exit_code is not None:
            results[str(terminal)] = record  # the latest record of a terminal has its result
    commands = []
    for record in records:
        method = record.detail.get("method")
        if record.type in ("exec", "agent_tool") or (record.type == "terminal" and not method):
            finished = record
        elif record.type == "terminal" and method == "terminal/create":
            finished = results.get(str(record.detail.get("terminal_id")), record)
        else:
            continue
        if record.command:
            commands.append(
                RecordedCommand(
                    seq=record.seq,
                    command=record.command,
                    cwd=record.cwd or WORKSPACE,
                    exit_code=finished.exit_code,
                    output=finished.output,
                )
            )
    return commands


def read_source(dataset: Path, attempt: str) -> ReplaySource:
    """The kept attempt `attempt`: its task, recorded commands, run key and last checkpoint."""
    directory = attempt_dir(dataset, attempt)
    activity = directory / ACTIVITY_FILE
    if not activity.is_file():
        raise UsageError(
            "no_recovery_state",
            f"attempt {attempt} has no activity.jsonl to replay",
            field="--run",
            hint="replay attempts run with --keep-recovery-state (see .ageval/runs/)",
        )
    records = ActivityJournal(activity).read()
    result = directory / "result.json"
    task = json.loads(result.read_text())["task_id"] if result.is_file() else None
    checkpoints = [record for record in records if record.type == "checkpoint"]
    return ReplaySource(
        attempt=attempt,
        task=str(task or attempt.rsplit("-", 2)[0]),
        commands=_recorded_commands(records),
        run_key=source_run_key(dataset, attempt),
        checkpoint=checkpoints[-1] if checkpoints else None,
        traffic=directory / MODEL_TRAFFIC if (directory / MODEL_TRAFFIC).is_file() else None,
    )


def replay_node(
    planned: Plan,
    source: ReplaySource,
    evaluate: bool,
    store: CacheStore,
    model_traffic: bool = False,
) -> Node:
    """The replay node of `source`, keyed by rules/replay.yaml beside the planned lock and image."""
    rule = load_rules()[KIND]
    assert planned.key_inputs is not None
    replayed: dict[str, Any] = {"source": source.attempt, "actions": source.actions_digest()}
    if model_traffic:
        if source.traffic is None:
            raise UsageError(
                "model_traffic_missing",
                f"attempt {source.attempt} recorded no model traffic (no model.jsonl)",
                field="--model-traffic",
                hint="replay an attempt whose agent talked to its model through the gateway",
            )
        replayed["model_traffic"] = digest_bytes(source.traffic.read_bytes())
    given = {"replay": replayed, "evaluate": evaluate}
    inputs = planned.key_inputs(rule, source.task, given)
    scoring = f"scoring_image:{source.task}"
    available = {
        "image": [planned.node(f"image:{source.task}").key],
        "scoring_image": [planned.node(scoring).key] if scoring in planned.graph else [],
        "run": [source.run_key] if source.run_key else [],
        "checkpoint": [str(source.checkpoint.detail["key"])] if source.checkpoint else [],
    }
    parents = {
        kind: available[kind]
        for kind in rule.parents
        if available[kind] or load_rules()[kind].when is None
    }
    key = node_key(rule, inputs, parents)
    action = store.get_action(KIND, key)
    return Node(
        id=f"{KIND}:{source.task}",
        kind=KIND,
        key=key,
        inputs=inputs,
        parents=parents,
        status="hit" if action is not None else "miss",
        task_id=source.task,
        action=action,
        payload={"source": source, "evaluate": evaluate, "model_traffic": model_traffic},
    )


def replay_id(node: Node) -> str:
    return f"{node.task_id}-{KIND}-{node.key[:12]}"


def _report_bytes(report: ReplayReport) -> bytes:
    return report.model_dump_json(indent=2).encode() + b"\n"


@node_executor(KIND)
def execute_replay(node: Node, context: ExecutionContext) -> NodeResult:
    """Replay the source's commands in a new environment; store the report and activity."""
    source: ReplaySource = node.payload["source"]
    runtime = dataset_of(context.plan).runtime(task_lock(context, source.task))
    identity = replay_id(node)
    directory = attempt_dir(context.plan.dataset.root, identity)
    shutil.rmtree(directory, ignore_errors=True)
    started = time.monotonic()
    scoring = context.results.get(f"scoring_image:{source.task}")
    scoring_images = {"verifier": reference_of(context.store, scoring)} if scoring else {}
    if node.payload.get("model_traffic"):
        report = _rerun_agent(runtime, node, context, source, directory, scoring_images)
    else:
        report = _run(
            runtime,
            node,
            image_reference(context, node),
            source.commands,
            directory,
            node.payload["evaluate"],
            context.store,
            scoring_images,
        )
    checkpoint = source.checkpoint
    report = report.model_copy(
        update={
            "source_attempt": source.attempt,
            "replay_id": identity,
            "key": node.key,
            "source_run_key": source.run_key,
            "checkpoint_seq": checkpoint.seq if checkpoint else None,
            "checkpoint_key": str(checkpoint.detail["key"]) if checkpoint else None,
            "evidence": directory.relative_to(context.plan.dataset.root).as_posix(),
            "seconds": round(time.monotonic() - started, 3),
        }
    )
    activity = directory / ACTIVITY_FILE
    traffic = directory / MODEL_TRAFFIC
    store = context.store
    with store.in_use():
        outputs = {
            "report": OutputRef(digest=store.put_bytes(_report_bytes(report)), type="blob"),
            "activity": OutputRef(
                digest=store.put_file(activity) if activity.is_file() else store.put_bytes(b""),
                type="blob",
            ),
            "model": OutputRef(
                digest=store.put_file(traffic) if traffic.is_file() else store.put_bytes(b""),
                type="blob",
            ),
        }
    evaluation = report.evaluation or {}
    return NodeResult(
        outputs=outputs,
        meta={
            "replay_id": identity,
            "source_attempt": source.attempt,
            "status": report.status,
            "divergences": report.divergences,
            "evaluation": evaluation.get("status"),
        },
    )


def write_view(dataset_root: Path, store: CacheStore, action: ActionManifest) -> ReplayReport:
    """Write `.ageval/runs/<replay id>/` (replay.json, activity.jsonl and, after a
    model-traffic replay, model.jsonl) from the cached node."""
    cached = ReplayReport.model_validate_json(store.get_bytes(action.outputs["report"].digest))
    directory = attempt_dir(dataset_root, cached.replay_id)
    report = cached.model_copy(update={"evidence": directory.as_posix()})
    atomic_write(directory / ACTIVITY_FILE, store.get_bytes(action.outputs["activity"].digest))
    model = action.outputs.get("model")
    traffic = store.get_bytes(model.digest) if model is not None else b""
    if traffic:
        atomic_write(directory / MODEL_TRAFFIC, traffic)
    atomic_write(directory / REPLAY_FILE, _report_bytes(report))
    return report


def replay(
    dataset: Path,
    attempt: str,
    store: CacheStore,
    *,
    evaluate: bool,
    fresh: bool = False,
    binding: BindingRequest | None = None,
    model_traffic: bool = False,
    trust_run_py: bool = False,
    format_options: FormatOptions | None = None,
) -> ReplayOutcome:
    """Replay `attempt` of `dataset` (or reuse the cached replay); see the module docstring.

    `fresh` re-executes it even when the cache holds it, replacing the cached entry. The
    agents are bound as `binding` says, else as the source attempt's lock recorded. The
    format's run settings (a Harbor job config, ...) are `format_options`: the task must lock
    as the source's did. With `model_traffic`, run.py runs again: in its sandbox, unless
    `trust_run_py`.
    """
    source = read_source(dataset, attempt)
    reaped = reap_orphans()
    kinds = frozenset({"image", "scoring_image"})
    request = PlanRequest(
        dataset=dataset,
        tasks=(source.task,),
        kinds=kinds,
        binding=binding or source_binding(dataset, attempt, store),
        harbor=format_options,
    )
    planned = plan(request, store)
    _check_same_lock(planned, source, source_lock(dataset, attempt, store))
    revalidate_images(planned)
    node = replay_node(planned, source, evaluate, store, model_traffic)
    node.payload["run_py"] = "trusted" if trust_run_py else "sandbox"
    if fresh:
        node.status, node.action = "miss", None
    planned.graph.add_node(node.id, node=node)
    for parent in ("image", "scoring_image"):
        if f"{parent}:{source.task}" in planned.graph:
            planned.graph.add_edge(f"{parent}:{source.task}", node.id)
    reopen_session()
    try:
        report = execute(planned, store, on_interrupt=interrupt_session)
    finally:
        remove_session_containers()
    failed = next((item for item in report.nodes if item.error is not None), None)
    if failed is not None and failed.error is not None:
        raise failed.error
    item = next(item for item in report.nodes if item.node.id == node.id)
    assert item.action is not None
    outcome: Outcome = "reused" if item.outcome == "reused" else "computed"
    root = planned.dataset.root
    written = write_view(root, store, item.action)
    record_branch(
        root,
        Branch(
            kind="replay",
            id=written.replay_id,
            node=node.id,
            key=node.key,
            task_id=source.task,
            source_attempt=source.attempt,
            checkpoint_seq=written.checkpoint_seq,
            checkpoint_key=written.checkpoint_key,
            parent_run_key=source.run_key,
            evaluate=evaluate,
        ),
    )
    return ReplayOutcome(report=written, outcome=outcome, node=node, reaped=reaped)


BOUND_FIELDS = ("binding", "overrides", "config_digest")
"""The lock fields a replay may change: how its agents are bound (`--agent`, `--model`,
`--profiles`, the model endpoints the host names), and the digest over them."""


def _check_same_lock(planned: Plan, source: ReplaySource, before: dict[str, Any] | None) -> None:
    """Refuse a replay whose task locks otherwise than its source did (`before`, its lock
    document), bindings aside: its agents would run the task with other files, limits or
    format settings (a Harbor job config's timeouts, say). A source lock the cache no longer
    holds (None) is not checked."""
    node_id = f"lock:{source.task}"
    if before is None or node_id not in planned:
        return
    document = planned.node(node_id).payload["lock"]
    fields = sorted((set(before) | set(document)) - set(BOUND_FIELDS))
    differing = [name for name in fields if before.get(name) != document.get(name)]
    if not differing:
        return
    first = differing[0]
    where = _first_difference(before.get(first), document.get(first), first)
    raise UsageError(
        "replay_lock_differs",
        f"task {source.task} now locks otherwise than attempt {source.attempt} did "
        f"(first difference: {where or differing[0]})",
        field="--run",
        hint="give replay the options the source was run with (--job-config, "
        "--env-params, --execution-params, --dataset-name); if the task itself changed "
        "since, run it again instead",
    )


def _first_difference(before: Any, after: Any, path: str = "") -> str | None:
    """The dotted path of the first field where two JSON documents differ."""
    if isinstance(before, dict) and isinstance(after, dict):
        for name in sorted(set(before) | set(after), key=str):
            found = _first_difference(before.get(name), after.get(name), f"{path}.{name}")
            if found is not None:
                return found
        return None
    return None if before == after else path.lstrip(".") or None


def _digest(output: str | None) -> str | None:
    return None if output is None else digest_bytes(output[-64 * 1024 :].encode())


def _run(
    runtime: TaskRuntime,
    replay: Node,
    image: str,
    commands: list[RecordedCommand],
    directory: Path,
    evaluate: bool,
    store: CacheStore,
    scoring_images: dict[str, str],
) -> ReplayReport:
    identity = replay_id(replay)
    place = start_environment(runtime, f"{replay.task_id}-replay", identity, image, store.root)
    journal = ActivityJournal(directory / ACTIVITY_FILE, Redactor(runtime.secret_values()))
    found: list[Divergence] = []
    try:
        for step, recorded in enumerate(commands):
            result = place.container.exec(recorded.command, workdir=recorded.cwd)
            journal.append(
                "exec",
                command=recorded.command,
                cwd=recorded.cwd,
                exit_code=result.exit_code,
                output=result.output,
                detail={"source_seq": recorded.seq},
            )
            divergence = _compare(step, recorded, result.exit_code, result.output)
            if divergence is not None:
                found.append(divergence)
        evaluation = None
        if evaluate:
            image, _ = place.container.commit(
                REPLAY_REPOSITORY, blank=place.environment_names, labels=image_labels(store)
            )
            try:
                evaluation = _evaluate(
                    runtime, image, place.workdir, identity, scoring_images, directory, store
                )
            finally:
                remove_image(image)
    finally:
        place.environment.close()
    return ReplayReport(
        source_attempt="",
        replay_id="",
        key=replay.key,
        status="diverged" if found else "matched",
        steps=len(commands),
        first_divergence=found[0] if found else None,
        divergences=len(found),
        evidence=directory.as_posix(),
        evaluation=evaluation,
    )


def _compare(
    step: int, recorded: RecordedCommand, exit_code: int, output: str
) -> Divergence | None:
    expected, actual = _digest(recorded.output), _digest(output) or ""
    same_output = expected is None or expected == actual
    if exit_code == recorded.exit_code and same_output:
        return None
    return Divergence(
        step=step,
        source_seq=recorded.seq,
        command=recorded.command,
        expected_exit_code=recorded.exit_code,
        actual_exit_code=exit_code,
        expected_output_digest=expected,
        actual_output_digest=actual,
    )


def _evaluate(
    runtime: TaskRuntime,
    image: str,
    workdir: str,
    identity: str,
    scoring_images: dict[str, str],
    directory: Path,
    store: CacheStore,
) -> dict[str, Any]:
    """Score the replayed outputs with the task's verifier, in containers of `image`, the
    replay's final state (the caller removes it)."""
    session = ScoringSession(
        lock=runtime.lock,
        task_dir=runtime.task_dir,
        attempt_id=identity,
        run=RunFacts(workdir=workdir),
        attempt_image=image,
        scoring_images=scoring_images,
        trials_dir=directory / "trials",
        cache_dir=store.root,
    )
    try:
        result = masked(runtime.verifier().verify(session), runtime.secret_values())
    except AgevalError as exc:
        result = EvaluationResult.failed(exc.code, exc.message)
    finally:
        session.close()
    document = result.model_dump(mode="json")
    return {key: document.get(key) for key in ("status", "score", "details", "error")}


def _source_attempt_number(attempt: str) -> int:
    number = attempt.rpartition("-")[0].rpartition("-")[2]
    return int(number) if number.isdigit() else 0


def _rerun_agent(
    runtime: TaskRuntime,
    replay: Node,
    context: ExecutionContext,
    source: ReplaySource,
    directory: Path,
    scoring_images: dict[str, str],
) -> ReplayReport:
    """Re-run the source's run stage (run.py and its agents) with the gateway answering from
    the source's model traffic; compare its terminal actions with the source's."""
    assert source.traffic is not None
    traffic = TrafficReplay.read(source.traffic, Redactor(runtime.secret_values()))
    run = dataclasses.replace(
        replay,
        kind="run",
        attempt=_source_attempt_number(source.attempt),
        payload={"model_traffic": traffic, "run_py": replay.payload.get("run_py")},
    )
    try:
        result: NodeResult | None = execute_run(run, context)
    except AgevalError:
        if traffic.divergence is None:
            raise
        result = None  # the agent met the divergence and failed there: report it
    ran = attempt_dir(context.plan.dataset.root, attempt_id(run))
    directory.mkdir(parents=True, exist_ok=True)
    for name in (ACTIVITY_FILE, MODEL_TRAFFIC):
        if (ran / name).is_file():
            shutil.move(ran / name, directory / name)
    shutil.rmtree(ran, ignore_errors=True)
    journal = directory / ACTIVITY_FILE
    replayed = _recorded_commands(ActivityJournal(journal).read() if journal.is_file() else [])
    found = _compare_actions(source.commands, replayed)
    evaluation = None
    if result is not None:
        image = str(result.meta["committed_image"])
        try:
            if replay.payload["evaluate"]:
                identity = replay_id(replay)
                workdir = str(result.meta["workdir"])
                evaluation = _evaluate(
                    runtime, image, workdir, identity, scoring_images, directory, context.store
                )
        finally:
            remove_image(image)
    divergence = traffic.divergence
    return ReplayReport(
        source_attempt="",
        replay_id="",
        key=replay.key,
        status="diverged" if found or divergence is not None else "matched",
        steps=len(replayed),
        first_divergence=found[0] if found else None,
        divergences=len(found),
        evidence=directory.as_posix(),
        evaluation=evaluation,
        model_traffic=True,
        model_requests=sum(traffic.served.values()),
        model_divergence=divergence,
    )


def _compare_actions(
    recorded: list[RecordedCommand], replayed: list[RecordedCommand]
) -> list[Divergence]:
    """Step by step: the re-run's command, exit code and output against the source's."""
    found: list[Divergence | None] = []
    for step in range(max(len(recorded), len(replayed))):
        if step >= len(recorded):
            extra = replayed[step]
            found.append(
                Divergence(
                    step=step,
                    source_seq=-1,
                    command=extra.command,
                    expected_exit_code=None,
                    actual_exit_code=-1 if extra.exit_code is None else extra.exit_code,
                    expected_output_digest=None,
                    actual_output_digest=_digest(extra.output) or "",
                )
            )
            continue
        expected = recorded[step]
        if step >= len(replayed):
            found.append(_compare(step, expected, -1, ""))
            continue
        actual = replayed[step]
        exit_code = -1 if actual.exit_code is None else actual.exit_code
        divergence = _compare(step, expected, exit_code, actual.output or "")
        if divergence is None and actual.command != expected.command:
            divergence = _compare(step, expected, -1, actual.output or "")
        found.append(divergence)
    return [item for item in found if item is not None]
