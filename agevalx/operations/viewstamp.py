"""The views stamp: a no-op run checks its views instead of writing them again.

A run whose every node was reused writes the same views as the run before it: the same
`result.json`, activity, transcript and journal files. Reading each back to compare costs
about half a millisecond per attempt. Instead, after the views of a job are written, the
stamp records:

- a digest of everything the views are made from: every node's key, entry and outputs,
  the attempts, the `--profiles` file's bytes and the options that shape the views (a key
  holds the ageval release that made it);
- the state (`lstat`: inode, size, mode, mtime and ctime) of every file and directory of
  the views: each attempt's directory, walked, and each journal and lock view file;
- the attempts' results, in a second file beside it.

The next run with the same digest `lstat`s those paths. If every state is the same, the
views are current: the results are read from the stamp, and nothing is read or written.
Any difference (a file edited, deleted or added, another job writing an attempt again)
falls back to writing the views, which writes a new stamp.

The stamp is an accelerator, never part of a key, and safe to delete. A state is trusted
only when the path last changed at least `RACY_WINDOW_NS` before the stamp was recorded
(git's "racily clean" rule): a file changed again within the clock tick it was written in
keeps its mtime, but no path keeps its ctime, and no archive or copy can set a ctime, so a
dataset cannot ship a stamp that vouches for its own files. Nor can it ship one that claims
to be recorded later than it was: a stamp recorded in the future, or whose own file changed
more than `RACY_WINDOW_NS` before the moment it says it was recorded (a copy made earlier),
vouches for nothing. The results file carries its digest in the stamp, so it cannot be
edited or replaced alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from pydantic import TypeAdapter, ValidationError

from agevalx.fsutil import RACY_WINDOW_NS, STATE_DIR, FileState, atomic_write, file_state
from agevalx.graph.execute import NodeReport
from agevalx.graph.plan import collector_paused
from agevalx.results.models import AttemptResult

STAMP_DIR = f"{STATE_DIR}/stamps"
STAMP_FORMAT = 2
"""Raised when what the views hold, or how they are written, changes."""

_RESULTS = TypeAdapter(list[AttemptResult])


class Stamp(NamedTuple):
    """Which stamp a job's views are checked by."""

    summary_key: str
    """The job's summary key: the stamp's name."""
    digest: str
    """What the views are made from (`views_digest`)."""
    attempt_ids: tuple[str, ...]
    """The job's attempts, in plan order: the results a stamp gives back must be theirs, and
    it must have recorded each one's result.json."""


def stamp_path(dataset_root: Path, summary_key: str) -> Path:
    """Where the stamp of a job's views lives (one per job, named by its summary key)."""
    return dataset_root.joinpath(STAMP_DIR, f"{summary_key}.json")


def views_digest(
    nodes: Sequence[NodeReport], attempt_ids: Sequence[str], options: dict[str, object]
) -> str | None:
    """The digest of what a job's views are made from, or None when they cannot be
    stamped: a node was computed, failed, skipped or retried in this invocation."""
    digest = hashlib.sha256(f"ageval views {STAMP_FORMAT}\n".encode())
    digest.update(json.dumps(options, sort_keys=True, default=str).encode())
    for item in sorted(nodes, key=lambda item: item.node.id):
        action = item.action or item.node.action
        if item.outcome != "reused" or item.error is not None or item.tries or item.retried:
            return None
        if action is None:
            return None
        outputs = ",".join(f"{name}={ref.digest}" for name, ref in sorted(action.outputs.items()))
        digest.update(f"\n{item.node.id} {item.node.key} {action.created} {outputs}".encode())
    digest.update(json.dumps(list(attempt_ids)).encode())
    return digest.hexdigest()


def _walk(directory: Path, found: dict[str, FileState], base: Path) -> None:
    """The states of `directory` and of everything below it, without following links."""
    try:
        found[str(directory.relative_to(base))] = file_state(os.lstat(directory))
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            _walk(Path(entry.path), found, base)
            continue
        try:
            found[str(Path(entry.path).relative_to(base))] = file_state(
                entry.stat(follow_symlinks=False)
            )
        except OSError:
            continue


def write_stamp(
    dataset_root: Path,
    stamp: Stamp,
    directories: Iterable[Path],
    files: Iterable[Path],
    results: list[AttemptResult],
) -> None:
    """Record the views just written: the states of `directories` (walked) and `files`,
    and the results. Best effort: a stamp that cannot be written is no stamp."""
    recorded_ns = time.time_ns()
    base = dataset_root / STATE_DIR
    states: dict[str, FileState] = {}
    try:
        for directory in directories:
            _walk(directory, states, base)
        for path in files:
            try:
                states[str(path.relative_to(base))] = file_state(os.lstat(path))
            except OSError:
                continue
        # The results are checked by the same model as result.json, parsed from JSON bytes.
        written = _RESULTS.dump_json(results)
        document = {
            "format": STAMP_FORMAT,
            "digest": stamp.digest,
            "recorded_ns": recorded_ns,
            "results": hashlib.sha256(written).hexdigest(),
            "states": states,
        }
        path = stamp_path(dataset_root, stamp.summary_key)
        atomic_write(path.with_suffix(".results.json"), written)
        atomic_write(path, json.dumps(document, separators=(",", ":")).encode())
    except (OSError, ValueError):
        return


def current_results(dataset_root: Path, stamp: Stamp) -> list[AttemptResult] | None:
    """The results the stamp holds when the views it recorded are current, else None."""
    try:
        path = stamp_path(dataset_root, stamp.summary_key)
        with open(path, "rb") as file:
            made_ns = os.fstat(file.fileno()).st_ctime_ns
            document = json.loads(file.read())
        if document.get("format") != STAMP_FORMAT or document.get("digest") != stamp.digest:
            return None
        recorded_ns = int(document["recorded_ns"])
        if recorded_ns > time.time_ns() or made_ns < recorded_ns - RACY_WINDOW_NS:
            return None  # a stamp from the future, or a copy older than its own recording
        trusted_before = recorded_ns - RACY_WINDOW_NS
        states = document["states"]
        # A stamp vouches for every attempt's result.json, or for nothing (one that names no
        # path would otherwise match any tree).
        if any(f"runs/{attempt}/result.json" not in states for attempt in stamp.attempt_ids):
            return None
        base = str(dataset_root / STATE_DIR)
        for relative, state in states.items():
            if relative.startswith("/") or ".." in relative.split("/"):
                return None
            info = os.lstat(os.path.join(base, relative))
            if list(file_state(info)) != state:
                return None
            if info.st_mtime_ns >= trusted_before or info.st_ctime_ns >= trusted_before:
                return None
        written = path.with_suffix(".results.json").read_bytes()
        if hashlib.sha256(written).hexdigest() != document["results"]:
            return None
        with collector_paused():  # thousands of results, kept for the rest of the command
            results = _RESULTS.validate_json(written)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ValidationError):
        return None
    if tuple(result.attempt_id for result in results) != stamp.attempt_ids:
        return None
    return results


def _filed_path(dataset_root: Path, stamp: Stamp) -> Path:
    return stamp_path(dataset_root, stamp.summary_key).with_suffix(".job.json")


def note_filed_job(
    dataset_root: Path, stamp: Stamp, contents: str, filed: Sequence[object]
) -> None:
    """Beside the stamp: the job ref a run filed (`share.FiledJob`, as a list) and `contents`,
    the digest of what its record holds beyond what the stamp's digest covers. Best effort."""
    document = {"digest": stamp.digest, "contents": contents, "filed": list(filed)}
    try:
        atomic_write(_filed_path(dataset_root, stamp), json.dumps(document).encode())
    except (OSError, ValueError, TypeError):
        return


def filed_job(
    dataset_root: Path, stamp: Stamp, contents: str
) -> tuple[str, str, tuple[str, ...]] | None:
    """The job ref (name, record digest, targets) noted by a run whose stamp had this digest
    and whose record held these `contents`, if any. Only a caller whose views this stamp
    vouched for may take it: its record is then the same as that run's."""
    try:
        document = json.loads(_filed_path(dataset_root, stamp).read_bytes())
        if document["digest"] != stamp.digest or document["contents"] != contents:
            return None
        ref, record, targets = document["filed"]
        if not (isinstance(ref, str) and isinstance(record, str) and isinstance(targets, list)):
            return None
        if not all(isinstance(target, str) for target in targets):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return ref, record, tuple(targets)
