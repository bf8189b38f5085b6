"""Durable attempts: attempt.json, and what a resumed attempt takes from its journal.

A run stage is a durable execution. Everything up to the attempt's last checkpoint is
complete: run.py is run again and its calls up to that point return their recorded results
(invocations are not repeated); the environment is re-attached when it is still aligned with
that point, and otherwise rebuilt and restored from the checkpoint's snapshots. Steps after the
last checkpoint are moved to activity.abandoned.jsonl (nothing recorded is lost) and redone.
So is their model traffic: the exchanges recorded in model.jsonl after the last checkpoint
(each checkpoint notes how many lines it had, `model_lines`) move to model.abandoned.jsonl,
from where they answer the redone invocation's requests (`gateway.replaying.ResumedTraffic`)
instead of the upstream, as far as they match. A format whose checkpoints do not hold all
its verifier reads (Harbor's: the whole container) is not rebuilt from a checkpoint: without
its old container, the attempt goes back to its start (`ResumePoint.back_to_start`), every
step redone with its recorded traffic answering first.
"""

from __future__ import annotations

import os
import socket
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from agevalx.environments.owners import Owner, is_alive
from agevalx.fsutil import atomic_write
from agevalx.gateway.recording import ABANDONED_TRAFFIC, MODEL_TRAFFIC
from agevalx.runner.activity import ActivityJournal, ActivityRecord

ATTEMPT_FILE = "attempt.json"
ABANDONED_FILE = "activity.abandoned.jsonl"
RUN_STEPS = ("invocation", "exec", "file_write")


class AttemptRecord(BaseModel):
    """`attempt.json`: who is running an attempt, with which configuration, since when."""

    model_config = ConfigDict(extra="forbid")

    attempt_id: str
    """The attempt."""
    task_id: str
    """Its task."""
    attempt: int
    """Its index in the job."""
    run_key: str
    """Key of the run node."""
    config_digest: str
    """The lock digest it was started with; a resume needs the same."""
    host: str
    """Host name of the process running it."""
    pid: int
    """Process id of the ageval process running it."""
    process_start: str | None = None
    """That process's start identity (`<boot id>:<start ticks>`, see `environments.owners`),
    so a later process given the same pid is not taken for it."""
    container_name: str | None = None
    """The attempt container's name, written before the container is created: a process
    killed while starting it leaves a trace of what to look for."""
    compose_project: str | None = None
    """The compose project of its sidecars, written before they start."""
    container_id: str | None = None
    """The attempt container, once started and prepared."""
    run_started: float | None = None
    """Unix time the run stage started (spent wall time counts on resume)."""
    spent_seconds: float = 0.0
    """Run-stage seconds spent by earlier processes of this attempt."""
    keep_recovery_state: bool = False
    """Started with `--keep-recovery-state`: a resume keeps the cut points too."""


def write_attempt(directory: Path, record: AttemptRecord) -> None:
    atomic_write(directory / ATTEMPT_FILE, record.model_dump_json(indent=2).encode())


def read_attempt(directory: Path) -> AttemptRecord | None:
    try:
        return AttemptRecord.model_validate_json((directory / ATTEMPT_FILE).read_bytes())
    except (OSError, ValueError):
        return None


def process_alive(record: AttemptRecord) -> bool:
    """Whether the process that wrote the record still runs (on this host; this process does
    not count). A record without a start identity (older ageval) falls back to the pid and the
    process's command line."""
    if record.host != socket.gethostname() or record.pid == os.getpid():
        return False
    if record.process_start is not None:
        return is_alive(Owner(host=record.host, pid=record.pid, start=record.process_start))
    try:
        os.kill(record.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return "ageval" in Path(f"/proc/{record.pid}/cmdline").read_text(errors="replace")
    except OSError:
        return True


def _timestamp(record: ActivityRecord) -> float:
    return datetime.fromisoformat(record.time.replace("Z", "+00:00")).astimezone(UTC).timestamp()


@dataclass
class ResumePoint:
    """What the journal of an interrupted attempt says."""

    completed: list[ActivityRecord]
    abandoned: list[ActivityRecord]
    spent_seconds: float

    @property
    def checkpoint(self) -> dict[str, Any] | None:
        """The last checkpoint's detail (key, workspace, home), if one was taken."""
        found = [record for record in self.completed if record.type == "checkpoint"]
        return found[-1].detail if found else None

    @property
    def invocations_used(self) -> int:
        return sum(1 for record in self.completed if record.type == "invocation")

    @property
    def aligned(self) -> bool:
        """True when no step was cut short: a surviving container matches the journal."""
        return not self.abandoned

    def unsnapshotted(self) -> ActivityRecord | None:
        """The last invocation when the process died before checkpointing it."""
        if self.completed and self.completed[-1].type == "invocation":
            return self.completed[-1]
        return None

    def back_to_checkpoint(self) -> ResumePoint:
        """Without the old container, only what the last checkpoint holds is complete."""
        last = max((i for i, r in enumerate(self.completed) if r.type == "checkpoint"), default=-1)
        kept, dropped = self.completed[: last + 1], self.completed[last + 1 :]
        return ResumePoint(kept, dropped + self.abandoned, self.spent_seconds)

    def back_to_start(self) -> ResumePoint:
        """Without the old container, when a checkpoint does not hold what the scoring reads
        (a Harbor verifier reads the whole container): nothing is complete, every step is
        redone (their model requests answered from the recorded ones); the time spent still
        counts."""
        return ResumePoint([], self.completed + self.abandoned, self.spent_seconds)


def resume_point(journal: ActivityJournal, attempt: AttemptRecord) -> ResumePoint:
    """Completed = up to the last run-level step (invocation, exec, file write, checkpoint);
    the agent actions of an invocation that did not finish come after it and are abandoned."""
    records = journal.read()
    kinds = (*RUN_STEPS, "checkpoint")
    last = max((i for i, r in enumerate(records) if r.type in kinds), default=-1)
    completed, abandoned = records[: last + 1], records[last + 1 :]
    spent = attempt.spent_seconds
    if attempt.run_started is not None and completed:
        spent += max(0.0, _timestamp(completed[-1]) - attempt.run_started)
    return ResumePoint(completed, abandoned, spent)


def set_aside(journal: ActivityJournal, point: ResumePoint) -> None:
    """Keep only the completed prefix in activity.jsonl; move the rest beside it."""
    if point.abandoned:
        with (journal.path.parent / ABANDONED_FILE).open("a", encoding="utf-8") as handle:
            for record in point.abandoned:
                handle.write(record.model_dump_json(exclude_none=True) + "\n")
    text = "".join(r.model_dump_json(exclude_none=True) + "\n" for r in point.completed)
    atomic_write(journal.path, text.encode())
    journal.reset_sequence(len(point.completed))
    kept = model_lines_kept(point)
    if kept is not None:
        set_traffic_aside(journal.path.parent, kept)


def model_lines_kept(point: ResumePoint) -> int | None:
    """How many model.jsonl lines belong to the completed steps: the count the last checkpoint
    noted; None (all of them) when the last model step is a completed invocation not
    checkpointed yet (a re-attached container goes on after it), or the checkpoint was taken
    by an ageval that did not note it."""
    for record in reversed(point.completed):
        if record.type == "invocation":
            return None
        if record.type == "checkpoint":
            lines = record.detail.get("model_lines")
            return lines if isinstance(lines, int) else None
    return 0


def set_traffic_aside(directory: Path, kept: int) -> None:
    """Keep the first `kept` lines of the attempt's model.jsonl; append the rest to
    model.abandoned.jsonl."""
    path = directory / MODEL_TRAFFIC
    try:
        lines = path.read_bytes().splitlines(keepends=True)
    except OSError:
        return
    if len(lines) <= kept:
        return
    rest = b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines[kept:])
    with (directory / ABANDONED_TRAFFIC).open("ab") as handle:
        handle.write(rest)
        handle.flush()
        os.fsync(handle.fileno())
    atomic_write(path, b"".join(lines[:kept]))


@dataclass
class Replayer:
    """Hands run.py's calls their recorded results, in order, until the resume point."""

    steps: list[ActivityRecord]
    position: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def from_point(cls, point: ResumePoint | None) -> Replayer:
        completed = point.completed if point else []
        return cls([record for record in completed if record.type in RUN_STEPS])

    def next(self, type: str, **match: Any) -> ActivityRecord | None:
        """The recorded step for this call, or None once the journal is exhausted or differs."""
        with self.lock:
            if self.position >= len(self.steps):
                return None
            record = self.steps[self.position]
            if record.type != type or any(getattr(record, k) != v for k, v in match.items()):
                self.position = len(self.steps)  # run.py took another path: go live from here
                return None
            self.position += 1
            return record


def recorded_usage(record: ActivityRecord) -> dict[str, Any]:
    usage = record.detail.get("usage")
    return usage if isinstance(usage, dict) else {}
