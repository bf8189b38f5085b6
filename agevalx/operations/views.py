"""`.ageval/runs/<attempt>/` written from the cache: result.json, activity, transcript, model
and judge traffic, artifacts, and the checkpoint index (the run stage's cut points). Every file
here is a view: deleting it loses nothing the cache does not hold."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agevalx.cache import hash_tree
from agevalx.cache.manifest import ActionManifest
from agevalx.cache.store import CacheStore
from agevalx.errors import AgevalError
from agevalx.fsutil import atomic_write, make_dirs, write_if_changed
from agevalx.gateway.recording import JUDGE_TRAFFIC
from agevalx.results.build import DIAGNOSTICS_FILE
from agevalx.results.models import AttemptResult
from agevalx.results.paths import attempt_dir
from agevalx.runner.activity import ActivityRecord

ARTIFACTS_DIR = "artifacts"
CHECKPOINT_INDEX = "checkpoints/index.json"


def write_attempt_views(
    root: Path,
    store: CacheStore,
    result: AttemptResult,
    run: ActionManifest | None,
    diagnostics: str | None = None,
    evaluation: ActionManifest | None = None,
) -> None:
    """`.ageval/runs/<attempt_id>/`: result.json, activity and transcript, model traffic,
    artifacts; the evaluation's judge traffic (judge-model.jsonl) from its cached outputs."""
    directory = make_dirs(attempt_dir(root, result.attempt_id))
    if evaluation is not None:
        judge = evaluation.outputs.get("judge_model")
        traffic = store.get_bytes(judge.digest) if judge is not None else b""
        if traffic:
            write_if_changed(directory / JUDGE_TRAFFIC, traffic)
        else:  # no judge was called: no file (nor an earlier evaluation's)
            (directory / JUDGE_TRAFFIC).unlink(missing_ok=True)
    if run is not None:
        views = (
            ("activity", "activity.jsonl"),
            ("transcript", "transcript.jsonl"),
            ("model", "model.jsonl"),
        )
        for output, name in views:
            if output not in run.outputs:
                continue
            data = store.get_bytes(run.outputs[output].digest)
            if data or output != "model":  # no model.jsonl for a run without model traffic
                write_if_changed(directory / name, data)
        _write_artifacts(store, run, directory / ARTIFACTS_DIR)
    if diagnostics is not None and result.status == "ERROR":
        target = make_dirs(directory / ARTIFACTS_DIR) / DIAGNOSTICS_FILE
        write_if_changed(target, diagnostics.encode("utf-8", "replace"))
    write_if_changed(directory / "result.json", result.model_dump_json(indent=2).encode() + b"\n")


def _write_artifacts(store: CacheStore, run: ActionManifest, target: Path) -> None:
    """`artifacts/`: what the task's format collected after the run stage (left out when it
    collected nothing)."""
    output = run.outputs.get("artifacts")
    if output is not None and _holds(target, output.digest, store):
        return  # written by an earlier run: kept, so the views' stamp can vouch for it
    if os.path.isdir(target) and not os.path.islink(target):
        shutil.rmtree(target, ignore_errors=True)
    elif os.path.lexists(target):  # a link (or a file) in its place: removed, never followed
        os.unlink(target)
    if output is not None and store.get_tree(output.digest).entries:
        store.restore_tree(output.digest, target)


def _holds(target: Path, digest: str, store: CacheStore) -> bool:
    """Whether the folder `target` (not a link) holds exactly the tree `digest`."""
    try:
        if not stat.S_ISDIR(os.lstat(target).st_mode):
            return False
        specials: list[str] = []  # a pipe or a socket in it: not what the run collected
        found = hash_tree(target, stat_cache=store.stat_cache, specials=specials)
        return not specials and found.digest == digest
    except (OSError, AgevalError):
        return False


class CutPoint(BaseModel):
    """One checkpoint of a run stage."""

    model_config = ConfigDict(extra="forbid")

    seq: int
    """The checkpoint record's position in activity.jsonl (what --checkpoint takes)."""
    step: int | None
    """The invocation it follows (0-based)."""
    time: str
    """When it was taken."""
    key: str
    """The checkpoint node's key."""
    workspace: str
    """Tree digest of /attempt/workspace."""
    home: str
    """Tree digest of /attempt/home."""
    bytes: int
    """Size of the two snapshots."""


def cut_points(records: list[ActivityRecord]) -> list[CutPoint]:
    return [
        CutPoint(
            seq=record.seq,
            step=record.invocation,
            time=record.time,
            key=str(record.detail["key"]),
            workspace=str(record.detail["workspace"]),
            home=str(record.detail["home"]),
            bytes=int(record.detail.get("bytes", 0)),
        )
        for record in records
        if record.type == "checkpoint"
    ]


def activity_cut_points(activity: bytes) -> list[CutPoint]:
    """The cut points an activity.jsonl records."""
    return cut_points(activity_records(activity))


def activity_records(data: bytes) -> list[ActivityRecord]:
    return [ActivityRecord.model_validate_json(line) for line in data.splitlines() if line.strip()]


def write_checkpoint_index(directory: Path, store: CacheStore, run: ActionManifest) -> None:
    """--keep-recovery-state: checkpoints/index.json lists the sealed attempt's cut points."""
    points = cut_points(activity_records(store.get_bytes(run.outputs["activity"].digest)))
    document = {"attempt_id": directory.name, "checkpoints": [p.model_dump() for p in points]}
    atomic_write(directory / CHECKPOINT_INDEX, json.dumps(document, indent=2).encode() + b"\n")
