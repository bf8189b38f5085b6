"""activity.jsonl: every completed step of the run stage, appended durably before it is used."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agevalx.fsutil import make_dirs
from agevalx.redaction import Redactor

if TYPE_CHECKING:
    from agevalx.agents.base import RecordedAction

RecordType = Literal[
    "invocation",
    "terminal",
    "agent_tool",
    "fs_read",
    "fs_write",
    "permission",
    "exec",
    "file_write",
    "checkpoint",
    "limit",
]
OUTPUT_KEEP = 64 * 1024


class ActivityRecord(BaseModel):
    """One line of activity.jsonl."""

    model_config = ConfigDict(extra="forbid")

    seq: int = Field(ge=0)
    """Position in the journal, from 0."""
    time: str
    """UTC time the step completed (ISO 8601)."""
    type: RecordType
    """`invocation` (one agent invocation), `terminal` / `agent_tool` / `fs_*` / `permission`
    (what the agent did), `exec` / `file_write` (what run.py did), `checkpoint`, `limit`."""
    role: str | None = None
    """The role whose invocation this step belongs to."""
    invocation: int | None = None
    """Index of that invocation in the run stage (from 0)."""
    command: str | None = None
    """Command line of a terminal, agent_tool or exec step."""
    cwd: str | None = None
    """Working directory of the command."""
    path: str | None = None
    """File of an fs or file_write step."""
    exit_code: int | None = None
    """Exit code, when the step has one."""
    output: str | None = None
    """Output (the last 64 KiB) of a command, or an invocation's final message."""
    detail: dict[str, Any] = Field(default_factory=dict)
    """Step-specific facts: stop reason, usage, checkpoint key and snapshot digests, ..."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class ActivityJournal:
    """Append-only, fsync'd journal; thread-safe."""

    def __init__(self, path: Path, redactor: Redactor | None = None) -> None:
        self.path = path
        self.redactor = redactor or Redactor([])
        """Masks secret values in every record appended (however it was produced)."""
        self._lock = threading.Lock()
        make_dirs(path.parent)
        self._seq = sum(1 for _ in self.read()) if path.exists() else 0

    def read(self) -> list[ActivityRecord]:
        records: list[ActivityRecord] = []
        if not self.path.exists():
            return records
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                records.append(ActivityRecord.model_validate_json(line))
            except ValueError:
                break  # a torn last line from a crash: everything before it is intact
        return records

    @property
    def sequence(self) -> int:
        """The number the next record gets (how many records there are)."""
        with self._lock:
            return self._seq

    def reset_sequence(self, seq: int) -> None:
        with self._lock:
            self._seq = seq

    def append(self, type: RecordType, **fields: Any) -> ActivityRecord:
        if isinstance(fields.get("output"), str):
            fields["output"] = fields["output"][-OUTPUT_KEEP:]
        fields = self.redactor.value(fields)
        with self._lock:
            record = ActivityRecord(seq=self._seq, time=_now(), type=type, **fields)
            line = json.dumps(record.model_dump(mode="json", exclude_none=True), sort_keys=True)
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
            with os.fdopen(os.open(self.path, flags, 0o644), "w", encoding="utf-8") as handle:
                handle.write(line + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            self._seq += 1
        return record

    def recorder(self, role: str, invocation: int) -> Callable[[RecordedAction], None]:
        """What an executor calls with each action it takes: one record per action."""

        def record(action: RecordedAction) -> None:
            self.append(
                action.type,
                role=role,
                invocation=invocation,
                command=action.command,
                cwd=action.cwd,
                path=action.path,
                exit_code=action.exit_code,
                output=action.output,
                detail=action.detail,
            )

        return record
