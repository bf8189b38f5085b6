"""`ageval replay`: re-execute an attempt's recorded terminal actions in a new environment.

No model is called. The new environment is built from the task's initial configuration; the
recorded commands (run.py's `exec`, the agent's terminal/* requests, commands the agent ran
with its own tools) are run in order and compared with the recording: exit code and output
digest. The report names the first divergence. With `evaluate`, the evaluator scores the
replayed outputs; otherwise a finished replay is neither PASS nor FAIL. The source attempt is
not changed, and a replay is never counted in pass@k.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agevalx.cache.store import CacheStore
from agevalx.environments.container import (
    ATTEMPT_LABEL,
    WORKSPACE,
    AttemptContainer,
    ContainerSpec,
    remove_session_containers,
)
from agevalx.environments.engine import remove_image
from agevalx.errors import AgevalError, UsageError
from agevalx.evaluation.evaluate import evaluate_in
from agevalx.fsutil import atomic_write
from agevalx.graph.execute import execute
from agevalx.graph.nodes import Node
from agevalx.graph.plan import PlanRequest, plan
from agevalx.hashing import digest_bytes
from agevalx.images.build import execute_image, reference_of
from agevalx.lockfile import BindingRequest
from agevalx.lockfile.node import execute_lock
from agevalx.results.paths import attempt_dir
from agevalx.runner.activity import ActivityJournal, ActivityRecord
from agevalx.runner.stage import start_environment

REPLAY_FILE = "replay.json"


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

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

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

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    format: Literal["ageval.replay/1"] = "ageval.replay/1"
    """Format version."""
    source_attempt: str
    """The replayed attempt (unchanged)."""
    replay_id: str
    """This replay's id; its evidence is under .ageval/runs/<replay_id>/."""
    status: Literal["matched", "diverged"]
    """`matched`: every step's exit code and output matched; `diverged`: see below."""
    steps: int
    """Commands re-executed."""
    first_divergence: Divergence | None = None
    """The first differing step."""
    divergences: int = 0
    """How many steps differed."""
    evidence: str
    """Directory with the replay's activity.jsonl and this report."""
    evaluation: dict[str, Any] | None = None
    """With --evaluate: the evaluator's status, score and details on the replayed outputs."""
    counted_in_pass_at_k: bool = False
    """Replays never count in pass@k."""
    seconds: float = Field(default=0.0)
    """Wall time of the replay."""


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


def _source_records(dataset: Path, attempt: str) -> tuple[str, list[ActivityRecord]]:
    directory = attempt_dir(dataset, attempt)
    activity = directory / "activity.jsonl"
    if not activity.is_file():
        raise UsageError(
            "no_recovery_state",
            f"attempt {attempt} has no activity.jsonl to replay",
            field="--run",
            hint="replay attempts run with --keep-recovery-state (see .ageval/runs/)",
        )
    result = directory / "result.json"
    task = json.loads(result.read_text())["task_id"] if result.is_file() else None
    if task is None:
        task = attempt.rsplit("-", 2)[0]
    return str(task), ActivityJournal(activity).read()


def _digest(output: str | None) -> str | None:
    return None if output is None else digest_bytes(output[-64 * 1024 :].encode())


def replay(dataset: Path, attempt: str, store: CacheStore, *, evaluate: bool) -> ReplayReport:
    """Replay `attempt` of `dataset` in a new environment; see the module docstring."""
    task, records = _source_records(dataset, attempt)
    planned = plan(
        PlanRequest(
            dataset=dataset, tasks=(task,), binding=BindingRequest(), kinds=frozenset({"image"})
        ),
        store,
    )
    report = execute(planned, store, {"lock": execute_lock, "image": execute_image})
    failed = next((item for item in report.nodes if item.error is not None), None)
    if failed is not None and failed.error is not None:
        raise failed.error
    lock = planned.node(f"lock:{task}").payload["lock"]
    reference = reference_of(store, report.actions[f"image:{task}"])
    replay_id = f"{task}-replay-{uuid.uuid4().hex[:12]}"
    directory = attempt_dir(planned.dataset.root, replay_id)
    started = time.monotonic()
    try:
        outcome = _run(planned, lock, task, reference, records, directory, evaluate, store.root)
    finally:
        remove_session_containers()
    outcome.source_attempt, outcome.replay_id = attempt, replay_id
    outcome.seconds = round(time.monotonic() - started, 3)
    atomic_write(directory / REPLAY_FILE, outcome.model_dump_json(indent=2).encode() + b"\n")
    return outcome


def _run(
    planned: Any,
    lock: dict[str, Any],
    task: str,
    image: str,
    records: list[ActivityRecord],
    directory: Path,
    evaluate: bool,
    cache_dir: Path,
) -> ReplayReport:
    node = Node(
        id=f"replay:{task}",
        kind="run",
        key=directory.name,
        inputs={},
        parents={},
        status="miss",
        task_id=task,
        attempt=0,
    )
    task_dir = planned.dataset.tasks_dir / task
    environment = start_environment(node, lock, task_dir, image, planned.profiles_path, cache_dir)
    journal = ActivityJournal(directory / "activity.jsonl")
    commands = _recorded_commands(records)
    found: list[Divergence] = []
    try:
        for step, recorded in enumerate(commands):
            result = environment.container.exec(recorded.command, workdir=recorded.cwd)
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
        container = environment.container
        evaluation = _evaluate(container, lock, task_dir, directory) if evaluate else None
    finally:
        environment.close()
    return ReplayReport(
        source_attempt="",
        replay_id="",
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
    container: AttemptContainer, lock: dict[str, Any], task_dir: Path, directory: Path
) -> dict[str, Any]:
    """Score the replayed outputs in a fresh scoring container made from the replay's state."""
    image = container.commit("ageval/replay", directory.name)
    scoring = AttemptContainer.start(
        ContainerSpec(
            image=image,
            name_hint=f"replay-eval-{directory.name}",
            tmpfs_mb=lock["task"]["evaluation"]["tmpfs_mb"],
            labels=((ATTEMPT_LABEL, directory.name),),
        )
    )
    try:
        document = evaluate_in(scoring, task_dir, lock, {})
    except AgevalError as exc:
        document = {"status": "ERROR", "error": exc.to_dict()}
    finally:
        scoring.remove()
        remove_image(image)
    return {key: document.get(key) for key in ("status", "score", "details", "error")}
