"""An attempt's files as the run stage writes them: activity.jsonl through the real journal,
transcript.jsonl entries as the ACP client logs them, checkpoint trees in a real cache."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agevalx.cache.manifest import ActionManifest, OutputRef
from agevalx.cache.store import CacheStore
from agevalx.results.models import AttemptResult
from agevalx.runner.activity import ActivityJournal
from tests.unit.reports.builders import key_of

WORKSPACE = "/attempt/workspace"
HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


def attempt_dir(dataset: Path, result: AttemptResult) -> Path:
    return dataset / ".ageval/runs" / result.attempt_id


def write_activity(
    dataset: Path,
    result: AttemptResult,
    commands: list[tuple[str, str, int]],
    *,
    snapshots: list[str] | None = None,
) -> ActivityJournal:
    """The agent runs `commands` (command, output, exit code) through terminal/*, then one
    invocation ends; `snapshots` are tree digests of the checkpoints taken after it."""
    journal = ActivityJournal(attempt_dir(dataset, result) / "activity.jsonl")
    for number, (command, output, exit_code) in enumerate(commands):
        terminal = f"term-{number}"
        journal.append(
            "terminal",
            role="solver",
            invocation=0,
            command=command,
            cwd=WORKSPACE,
            detail={"method": "terminal/create", "terminal_id": terminal},
        )
        journal.append(
            "terminal",
            role="solver",
            invocation=0,
            command=command,
            cwd=WORKSPACE,
            exit_code=exit_code,
            output=output,
            detail={"method": "terminal/wait_for_exit", "terminal_id": terminal},
        )
    journal.append(
        "invocation",
        role="solver",
        invocation=0,
        output="done",
        detail={"stop_reason": "end_turn", "usage": {}},
    )
    for number, digest in enumerate(snapshots or []):
        journal.append(
            "checkpoint",
            invocation=0,
            detail={"key": key_of("checkpoint", number), "workspace": digest, "home": digest},
        )
    return journal


def transcript_lines(*entries: Mapping[str, Any]) -> bytes:
    return b"".join(json.dumps(entry, sort_keys=True).encode() + b"\n" for entry in entries)


def message(text: str, kind: str = "agent_message_chunk") -> dict[str, Any]:
    return {
        "type": "session_update",
        "update": {"sessionUpdate": kind, "content": {"type": "text", "text": text}},
    }


def write_transcript(dataset: Path, result: AttemptResult, data: bytes) -> Path:
    path = attempt_dir(dataset, result) / "transcript.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def snapshot(store: CacheStore, tmp: Path, files: Mapping[str, bytes | str]) -> str:
    """Store a tree holding `files` and return its digest."""
    root = tmp / f"tree-{key_of(sorted(files.items()))}"
    root.mkdir(parents=True)
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return store.put_tree(root).digest


def cache_run(store: CacheStore, result: AttemptResult, workspace: str, home: str) -> None:
    """The run node of `result` in the cache, with its final snapshots."""
    key = next(node.key for node in result.nodes if node.kind == "run")
    outputs = {
        "activity": OutputRef(digest=store.put_bytes(b""), type="blob"),
        "transcript": OutputRef(digest=store.put_bytes(b""), type="blob"),
        "workspace": OutputRef(digest=workspace, type="tree"),
        "home": OutputRef(digest=home, type="tree"),
    }
    store.put_action(ActionManifest.create("run", key, outputs))
