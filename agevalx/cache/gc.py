"""Garbage collection: keep what refs and the newest entries reach, delete the rest.

gc holds the gc lock exclusively, so no writer is between storing a blob and writing
the action entry that names it. It deletes in reference order (action entries, then
trees, then blobs), so even a crash mid-gc never leaves an entry naming a deleted object.
Incomplete or malformed entries are misses anyway and are deleted too: afterwards every
remaining action entry is a complete hit.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agevalx.cache.manifest import ActionManifest, TreeManifest
from agevalx.cache.scan import (
    ActionFile,
    file_size,
    iter_action_files,
    iter_blob_files,
    iter_tree_files,
)
from agevalx.cache.store import CacheStore, discard
from agevalx.limits import DEFAULT_KEEP_NEWEST as DEFAULT_KEEP_NEWEST

STALE_TMP_SECONDS = 3600


class GcReport(BaseModel):
    """What one gc run kept and removed."""

    model_config = ConfigDict(extra="forbid")

    actions_removed: int = 0
    """Action entries deleted (unreachable, incomplete or malformed)."""
    trees_removed: int = 0
    """Tree manifests deleted."""
    blobs_removed: int = 0
    """Blobs deleted."""
    tmp_removed: int = 0
    """Staging files older than an hour deleted from `tmp/`."""
    bytes_freed: int = 0
    """Total size of every deleted file."""
    actions_kept: int = 0
    """Action entries that remain."""
    trees_kept: int = 0
    """Tree manifests that remain."""
    blobs_kept: int = 0
    """Blobs that remain."""


def collect_garbage(store: CacheStore, keep_newest_per_kind: int = DEFAULT_KEEP_NEWEST) -> GcReport:
    """Delete everything not reachable from refs or the newest complete entries per kind."""
    if keep_newest_per_kind < 0:
        raise ValueError("keep_newest_per_kind must be >= 0")
    with store.lock.exclusive():
        refs = [target for targets in store.list_refs().values() for target in targets]
        trees: dict[str, TreeManifest | None] = {}
        actions = list(iter_action_files(store))
        kept = _kept_actions(store, actions, refs, keep_newest_per_kind, trees)
        live_trees, live_blobs = _reachable(store, kept, refs, trees)
        kept_names = {f"{m.kind}/{m.key}" for m in kept}
        swept_actions = _sweep(((a.name, a.path) for a in actions), kept_names)
        swept_trees = _sweep(iter_tree_files(store), live_trees)
        swept_blobs = _sweep(iter_blob_files(store), live_blobs)
        swept_tmp = _sweep(_stale_tmp(store.tmp), set())
    return GcReport(
        actions_removed=swept_actions.removed,
        trees_removed=swept_trees.removed,
        blobs_removed=swept_blobs.removed,
        tmp_removed=swept_tmp.removed,
        bytes_freed=sum(s.freed for s in (swept_actions, swept_trees, swept_blobs, swept_tmp)),
        actions_kept=swept_actions.kept,
        trees_kept=swept_trees.kept,
        blobs_kept=swept_blobs.kept,
    )


def _kept_actions(
    store: CacheStore,
    actions: list[ActionFile],
    refs: list[str],
    keep_newest: int,
    trees: dict[str, TreeManifest | None],
) -> list[ActionManifest]:
    """Complete entries that a ref names or that are among the newest per kind."""
    by_kind: dict[str, list[ActionManifest]] = defaultdict(list)
    for action in actions:
        manifest = action.manifest
        if manifest is not None and not store.missing_outputs(manifest, trees):
            by_kind[action.kind].append(manifest)
    wanted = set(refs)
    kept: list[ActionManifest] = []
    for entries in by_kind.values():
        entries.sort(key=lambda m: (m.created, m.key), reverse=True)
        kept.extend(entries[:keep_newest])
        kept.extend(m for m in entries[keep_newest:] if f"{m.kind}/{m.key}" in wanted)
    return kept


def _reachable(
    store: CacheStore,
    kept: list[ActionManifest],
    refs: list[str],
    trees: dict[str, TreeManifest | None],
) -> tuple[set[str], set[str]]:
    """Digests of the trees and blobs that kept entries and ref'd objects need."""
    live_trees: set[str] = set()
    live_blobs: set[str] = set()
    named = [(o.digest, o.type) for m in kept for o in m.outputs.values()]
    for digest in (target for target in refs if "/" not in target):
        named += [(digest, "blob"), (digest, "tree")]
    for digest, kind in named:
        if kind == "blob":
            live_blobs.add(digest)
            continue
        live_trees.add(digest)
        tree = store.tree_or_none(digest, trees)
        if tree is not None:
            live_blobs.update(entry.digest for entry in tree.files() if entry.digest)
    return live_trees, live_blobs


def _stale_tmp(tmp: Path) -> Iterator[tuple[str, Path]]:
    cutoff = time.time() - STALE_TMP_SECONDS
    for path in tmp.iterdir():
        if path.is_file() and path.stat().st_mtime < cutoff:
            yield path.name, path


@dataclass
class _Swept:
    removed: int = 0
    freed: int = 0
    kept: int = 0


def _sweep(files: Iterable[tuple[str, Path]], live: set[str]) -> _Swept:
    """Delete every file whose name is not in `live`; count what went and what stayed."""
    swept = _Swept()
    for name, path in files:
        if name in live:
            swept.kept += 1
            continue
        size = file_size(path)
        discard(path)
        if path.exists():
            swept.kept += 1
        else:
            swept.removed += 1
            swept.freed += size
    return swept
