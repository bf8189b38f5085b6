"""Recovery operations: resuming an interrupted attempt, and listing its checkpoints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agevalx.cache.store import CacheStore
from agevalx.environments.container import remove_leftover_containers
from agevalx.errors import AgevalError, UsageError
from agevalx.fsutil import write_if_changed
from agevalx.graph.plan import Plan
from agevalx.lockfile.request import BindingRequest
from agevalx.operations.lineage import recorded_node_key
from agevalx.operations.views import CHECKPOINT_INDEX, CutPoint, activity_records, cut_points
from agevalx.results.paths import attempt_dir, attempt_id
from agevalx.runner.activity import ActivityRecord
from agevalx.runner.output import RunOutput
from agevalx.runner.recovery import process_alive, read_attempt

if TYPE_CHECKING:
    from agevalx.operations.request import RunRequest


def _split(attempt: str) -> tuple[str, int]:
    task, _, rest = attempt.rpartition("-")
    task, _, index = task.rpartition("-")
    if not task or not index.isdigit() or len(rest) != 12:
        raise UsageError(
            "resume_unknown_attempt",
            f"{attempt!r} is not an attempt id",
            field="--resume",
            hint="attempt ids look like <task>-<attempt>-<12 hex>; see .ageval/runs/",
        )
    return task, int(index)


def _attempt_of_task(request: RunRequest, attempt: str, code: str) -> tuple[str, int]:
    """The (task, index) of an attempt id, which must belong to the one --task given."""
    task, index = _split(attempt)
    if request.tasks != (task,):
        raise UsageError(
            code,
            f"attempt {attempt} belongs to task {task!r}",
            field="--task",
            hint=f"pass --task {task}",
        )
    return task, index


def check_resumable(request: RunRequest) -> tuple[int, ...]:
    """Refuse (exit 2) a resume of a sealed, changed or still running attempt."""
    assert request.resume is not None
    _, index = _attempt_of_task(request, request.resume, "resume_task_mismatch")
    assert request.dataset is not None
    directory = attempt_dir(request.dataset, request.resume)
    if not directory.is_dir():
        raise UsageError(
            "resume_unknown_attempt", f"no attempt {request.resume} under .ageval/runs/"
        )
    if (directory / "result.json").exists():
        raise UsageError(
            "resume_sealed",
            f"attempt {request.resume} is sealed: its result.json exists",
            hint="fork it with --fork, or start new attempts with --fresh",
        )
    previous = read_attempt(directory)
    if previous is not None and process_alive(previous):
        raise UsageError(
            "resume_attempt_running",
            f"process {previous.pid} is still running attempt {request.resume}",
            hint="wait for it, or stop it first",
        )
    return (index,)


def resumed_container(request: RunRequest) -> str | None:
    """The container the interrupted attempt recorded (a resume may re-attach it)."""
    assert request.resume is not None and request.dataset is not None
    previous = read_attempt(attempt_dir(request.dataset, request.resume))
    return previous.container_id if previous else None


def mark_resume(planned: Plan, attempt: str) -> None:
    task, index = _split(attempt)
    node = planned.node(f"run:{task}#{index}")
    directory = attempt_dir(planned.dataset.root, attempt)
    previous = read_attempt(directory)
    digest = planned.lock(task)["config_digest"]
    changed = previous is not None and previous.config_digest != digest
    if attempt_id(node) != attempt or changed:
        raise UsageError(
            "resume_config_mismatch",
            f"the locked configuration of {task} changed since attempt {attempt} started",
            hint="restore the task's files and profiles, or start a new attempt",
        )
    node.payload["resume"] = True
    remove_leftover_containers(attempt, keep=previous.container_id if previous else None)


def list_checkpoints(dataset: Path, attempt: str) -> list[CutPoint]:
    """The cut points of a kept (or interrupted, not yet sealed) attempt."""
    directory = attempt_dir(dataset, attempt)
    index = directory / CHECKPOINT_INDEX
    if index.is_file():
        document: dict[str, Any] = json.loads(index.read_text())
        return [CutPoint.model_validate(item) for item in document["checkpoints"]]
    activity = directory / "activity.jsonl"
    if activity.is_file() and not (directory / "result.json").exists():
        return cut_points(activity_records(activity.read_bytes()))
    raise AgevalError(
        "no_recovery_state",
        f"attempt {attempt} kept no recovery state",
        file=str(directory),
        hint="run with --keep-recovery-state to keep the cut points of sealed attempts",
    )


def fork_origin(request: RunRequest) -> tuple[dict[str, str], list[ActivityRecord]]:
    """The checkpoint a fork starts from: its key-input and the source steps before it."""
    assert request.fork is not None
    _attempt_of_task(request, request.fork, "fork_task_mismatch")
    if request.checkpoint is None:
        raise UsageError("fork_needs_checkpoint", "--fork needs --checkpoint <seq>")
    assert request.dataset is not None
    source = attempt_dir(request.dataset, request.fork) / "activity.jsonl"
    if not source.is_file():
        raise UsageError(
            "no_recovery_state",
            f"attempt {request.fork} kept no recovery state",
            field="--fork",
            hint="fork attempts that ran with --keep-recovery-state",
        )
    records = activity_records(source.read_bytes())
    index = next(
        (
            i
            for i, r in enumerate(records)
            if r.seq == request.checkpoint and r.type == "checkpoint"
        ),
        None,
    )
    if index is None:
        raise UsageError(
            "unknown_checkpoint",
            f"attempt {request.fork} has no checkpoint with seq {request.checkpoint}",
            field="--checkpoint",
            hint=f"list them with: ageval checkpoints <dataset> --run {request.fork}",
        )
    key = str(records[index].detail["key"])
    return {"source": request.fork, "checkpoint": key}, records[: index + 1]


def fork_image(request: RunRequest, checkpoint: str, store: CacheStore) -> str:
    """The source attempt's committed image, for a fork of a task whose checkpoints do not
    hold all its verifier reads (Harbor's): the workdir and HOME alone would leave out what
    the agent did elsewhere. Only the source's last checkpoint matches that image (nothing
    ran after it but the commit); an earlier one is refused (`fork_checkpoint_partial`)."""
    assert request.dataset is not None and request.fork is not None
    directory = attempt_dir(request.dataset, request.fork)
    records = activity_records((directory / "activity.jsonl").read_bytes())
    keys = [str(r.detail.get("key")) for r in records if r.type == "checkpoint"]
    if not keys or keys[-1] != checkpoint:
        raise UsageError(
            "fork_checkpoint_partial",
            f"checkpoint {request.checkpoint} of attempt {request.fork} holds only its "
            "workdir and HOME, and this task's verifier reads the whole container",
            field="--checkpoint",
            hint="fork from the attempt's last checkpoint (its committed image holds all the "
            "agent left), or run a new attempt",
        )
    source = read_attempt(directory)
    action = store.get_action("run", source.run_key) if source is not None else None
    if action is None:
        raise UsageError(
            "fork_source_missing",
            f"the run of attempt {request.fork} is not in this cache, so the container it "
            "left cannot be forked",
            field="--fork",
            hint="pull the job's cache (ageval cache pull), or run the source again",
        )
    return RunOutput.of(action).committed_image


BINDING_PROFILES = "profiles.yaml"
"""Beside an attempt's result.json: the `--profiles` file it was bound with, as written (its
secrets are `${VAR}` references: a literal one fails the lock), so a replay or a fork of it
binds the same agents without the file being named again."""
BINDING_FILE = "binding.json"
"""Beside it: `{"profiles_file": the name its lock recorded for the file}`."""


def record_profiles(directory: Path, profiles: Path | None, name: str | None) -> None:
    """Keep the `--profiles` file an attempt was bound with in its directory (see
    `BINDING_PROFILES`), with `name`, the one its lock recorded; nothing when it was bound
    otherwise."""
    if profiles is None:
        return
    try:
        content = profiles.read_bytes()
    except OSError:  # the lock read it a moment ago; a file gone since is not worth failing
        return
    write_if_changed(directory / BINDING_PROFILES, content)
    write_if_changed(directory / BINDING_FILE, json.dumps({"profiles_file": name}).encode())


def source_lock(dataset: Path, attempt: str, store: CacheStore) -> dict[str, Any] | None:
    """The lock document an attempt ran under: the lock its result.json names, read from
    the cache; None when either is missing or unreadable."""
    key = recorded_node_key(dataset, attempt, "lock")
    try:
        action = store.get_action("lock", key) if key is not None else None
        document = json.loads(store.get_bytes(action.outputs["lock"].digest)) if action else None
    except (ValueError, KeyError, AgevalError):
        return None
    return document if isinstance(document, dict) else None


def source_binding(dataset: Path, attempt: str, store: CacheStore) -> BindingRequest:
    """How the source attempt bound its agents, for a replay or a fork of it: the profiles
    file recorded with it (`record_profiles`), else the `--agent`/`--model` its lock in the
    cache recorded; an empty request (the dataset's own profiles.yaml) when neither is known."""
    directory = attempt_dir(dataset, attempt)
    lock = source_lock(dataset, attempt, store) or {}
    overrides = lock.get("overrides") or {}
    agent, model = overrides.get("agent"), overrides.get("model")
    recorded = directory / BINDING_PROFILES
    if agent is None and recorded.is_file():
        try:
            name = json.loads((directory / BINDING_FILE).read_bytes()).get("profiles_file")
        except (OSError, ValueError, AttributeError):
            name = None
        return BindingRequest(
            profiles=recorded, profiles_name=name if isinstance(name, str) else None
        )
    return BindingRequest(agent=agent, model=model)
