"""Everything the attempt page shows, read from `.ageval/runs/<attempt_id>/` and the cache.

The terminal actions are those `ageval replay` re-executes (`read_source`), so a replay's
divergence step points at the same list. The prompt is what the run sent to each invocation,
as its transcript recorded it (secrets masked); for runs made before prompts were recorded, the
task's prompt files as the lock recorded them: a file changed since the run is flagged, not
shown as if it were the one sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agevalx.cache.errors import CacheError
from agevalx.cache.manifest import TreeManifest
from agevalx.cache.store import CacheStore
from agevalx.hashing import digest_file
from agevalx.lockfile.node import lock_path
from agevalx.operations.replay import read_source
from agevalx.operations.views import CutPoint, cut_points
from agevalx.results.models import AttemptResult
from agevalx.results.paths import attempt_dir
from agevalx.runner.activity import ActivityJournal, ActivityRecord
from agevalx.view.changes import FileChange, tree_changes
from agevalx.view.lineage import AttemptLineage, attempt_lineage

RAW_FILES = (
    "result.json",
    "activity.jsonl",
    "transcript.jsonl",
    "activity.abandoned.jsonl",
    "attempt.json",
    "checkpoints/index.json",
)
PROMPT_FILES = ("instruction.md",)
PROMPT_DIR = "prompts/"
SENT_PROMPTS = 100
SENT_PROMPT_BYTES = 4 * 1024 * 1024
AREAS = ("workspace", "home")
ACTIONS_PER_PAGE = 100
ACTIVITY_PER_PAGE = 200


@dataclass(frozen=True)
class Command:
    """A terminal action: a command run by the agent (terminal, own tool) or by run.py."""

    seq: int
    type: str
    role: str | None
    invocation: int | None
    command: str
    cwd: str
    exit_code: int | None
    output: str | None


@dataclass(frozen=True)
class PromptFile:
    path: str
    text: str | None
    note: str | None
    """Set when the text is not the locked one (changed since the run, or gone)."""


@dataclass(frozen=True)
class NodeStatus:
    """A node behind the result: what this attempt's run did with it, and the cache now."""

    id: str
    kind: str
    key: str
    outcome: str
    """reused, computed, failed or blocked (from result.json)."""
    cached: bool | None
    """In the cache now (None: no cache to look in)."""


@dataclass(frozen=True)
class AreaChanges:
    area: str
    changes: list[FileChange] | None
    note: str | None


@dataclass(frozen=True)
class Step:
    """A snapshot of the run stage (a checkpoint, or the end of the run) and what changed."""

    label: str
    key: str | None
    """The checkpoint node's key (None for the end of the run)."""
    first: bool
    """The first snapshot: compared with nothing (the start of the run is not snapshotted)."""
    areas: list[AreaChanges]


@dataclass(frozen=True)
class AttemptView:
    result: AttemptResult
    files: list[str]
    """Which of `RAW_FILES` exist in the attempt's directory."""
    lock: dict[str, Any] | None
    prompts: list[PromptFile]
    commands: list[Command]
    activity: list[ActivityRecord]
    """The records that are not terminal actions: invocations, file access, checkpoints, ..."""
    steps: list[Step]
    nodes: list[NodeStatus]
    lineage: AttemptLineage

    @property
    def action_pages(self) -> int:
        return page_count(len(self.commands), ACTIONS_PER_PAGE)

    @property
    def activity_pages(self) -> int:
        return page_count(len(self.activity), ACTIVITY_PER_PAGE)

    @property
    def configured_limits(self) -> dict[str, Any]:
        limits = ((self.lock or {}).get("task") or {}).get("limits") or {}
        return limits if isinstance(limits, dict) else {}


def page_count(items: int, per_page: int) -> int:
    return max(1, -(-items // per_page))


def load_attempt(root: Path, result: AttemptResult, store: CacheStore | None) -> AttemptView:
    directory = attempt_dir(root, result.attempt_id)
    records = _records(directory / "activity.jsonl")
    commands = _commands(root, result.attempt_id, records)
    folded = {command.seq for command in commands} | {
        record.seq for record in records if record.type == "terminal"
    }
    lock = attempt_lock(root, result, store)
    return AttemptView(
        result=result,
        files=[name for name in RAW_FILES if (directory / name).is_file()],
        lock=lock,
        prompts=_sent_prompts(directory / "transcript.jsonl")
        or _prompts(root, result.task_id, lock),
        commands=commands,
        activity=[record for record in records if record.seq not in folded],
        steps=_steps(store, cut_points(records), _final(store, result)),
        nodes=_nodes(result, store),
        lineage=attempt_lineage(root, result.attempt_id, store),
    )


def _records(path: Path) -> list[ActivityRecord]:
    return ActivityJournal(path).read() if path.is_file() else []


def _commands(root: Path, attempt_id: str, records: list[ActivityRecord]) -> list[Command]:
    if not records:
        return []
    by_seq = {record.seq: record for record in records}
    return [
        Command(
            seq=recorded.seq,
            type=by_seq[recorded.seq].type,
            role=by_seq[recorded.seq].role,
            invocation=by_seq[recorded.seq].invocation,
            command=recorded.command,
            cwd=recorded.cwd,
            exit_code=recorded.exit_code,
            output=recorded.output,
        )
        for recorded in read_source(root, attempt_id).commands
    ]


def attempt_lock(
    root: Path, result: AttemptResult, store: CacheStore | None
) -> dict[str, Any] | None:
    """The attempt's lock: its lock node's output, else the lock view if it is the same."""
    view = lock_path(root, result.task_id)
    candidates = [_cached_lock(result, store), view.read_bytes() if view.is_file() else None]
    for data in candidates:
        try:
            document = json.loads(data) if data is not None else None
        except ValueError:
            continue
        if isinstance(document, dict) and document.get("config_digest") == result.config_digest:
            return document
    return None


def _cached_lock(result: AttemptResult, store: CacheStore | None) -> bytes | None:
    key = next((node.key for node in result.nodes if node.kind == "lock"), None)
    action = store.get_action("lock", key) if store is not None and key else None
    if store is None or action is None or "lock" not in action.outputs:
        return None
    try:
        return store.get_bytes(action.outputs["lock"].digest)
    except CacheError:
        return None


def _sent_prompts(path: Path) -> list[PromptFile]:
    """The prompts the run sent, as the run recorded them in its transcript (secrets masked).

    Only top-level `{"type": "prompt"}` entries count; at most `SENT_PROMPTS` are read and
    a line longer than `SENT_PROMPT_BYTES` is skipped, so a huge transcript stays cheap."""
    found: list[PromptFile] = []
    if not path.is_file() or path.is_symlink():
        return found
    with path.open("rb") as stream:
        for raw in stream:
            if len(found) >= SENT_PROMPTS:
                break
            if b'"prompt"' not in raw or len(raw) > SENT_PROMPT_BYTES:
                continue
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(entry, dict) or entry.get("type") != "prompt":
                continue
            text, role = entry.get("text"), entry.get("role")
            if isinstance(text, str) and isinstance(role, str):
                number = entry.get("invocation")
                label = f"sent to {role}" + (
                    f" (invocation {number})" if isinstance(number, int) else ""
                )
                found.append(PromptFile(label, text, None))
    return found


def _prompts(root: Path, task_id: str, lock: dict[str, Any] | None) -> list[PromptFile]:
    if lock is None:
        return []
    tasks_root = (lock.get("dataset") or {}).get("tasks_root") or "."
    task_dir = root / tasks_root / task_id
    found = []
    for path, entry in sorted((lock.get("files") or {}).items()):
        if not (path.startswith(PROMPT_DIR) or path in PROMPT_FILES):
            continue
        file = task_dir / path
        if not file.is_file() or file.is_symlink():
            found.append(PromptFile(path, None, "the file is no longer in the task"))
        elif digest_file(file) != (entry or {}).get("digest"):
            text = file.read_text(encoding="utf-8", errors="replace")
            found.append(PromptFile(path, text, "changed since the run: this is today's text"))
        else:
            found.append(PromptFile(path, file.read_text(encoding="utf-8", errors="replace"), None))
    return found


def _nodes(result: AttemptResult, store: CacheStore | None) -> list[NodeStatus]:
    return [
        NodeStatus(
            id=node.id,
            kind=node.kind,
            key=node.key,
            outcome=node.outcome,
            cached=None if store is None else store.get_action(node.kind, node.key) is not None,
        )
        for node in result.nodes
    ]


def _final(store: CacheStore | None, result: AttemptResult) -> dict[str, str] | None:
    """The run node's final snapshots (its `workspace` and `home` outputs)."""
    key = next((node.key for node in result.nodes if node.kind == "run"), None)
    action = store.get_action("run", key) if store is not None and key else None
    if action is None:
        return None
    return {area: action.outputs[area].digest for area in AREAS if area in action.outputs}


def _steps(
    store: CacheStore | None, points: list[CutPoint], final: dict[str, str] | None
) -> list[Step]:
    snapshots: list[tuple[str, str | None, dict[str, str]]] = [
        (
            f"checkpoint {point.seq} (after invocation {point.step})",
            point.key,
            {"workspace": point.workspace, "home": point.home},
        )
        for point in points
    ]
    if final is not None:
        snapshots.append(("end of the run stage", None, final))
    if store is None:
        return [Step(label, key, i == 0, []) for i, (label, key, _) in enumerate(snapshots)]
    trees: dict[str, TreeManifest | None] = {}
    steps = []
    previous: dict[str, str] = {}
    for index, (label, key, digests) in enumerate(snapshots):
        areas = []
        for area in AREAS:
            after = store.tree_or_none(digests[area], trees) if area in digests else None
            before = store.tree_or_none(previous[area], trees) if area in previous else None
            if after is None:
                areas.append(AreaChanges(area, None, "the snapshot is not in the cache"))
            elif area in previous and before is None:
                areas.append(AreaChanges(area, None, "the previous snapshot is not in the cache"))
            elif previous.get(area) == digests[area]:
                areas.append(AreaChanges(area, [], None))
            else:
                areas.append(AreaChanges(area, tree_changes(store, before, after), None))
        steps.append(Step(label, key, index == 0, areas))
        previous = digests
    return steps
