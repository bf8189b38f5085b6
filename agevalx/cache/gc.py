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

DEFAULT_KEEP_NEWEST = 100
STALE_TMP_SECONDS = 3600


class GcReport(BaseModel):
    """What one gc run kept and removed."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

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
    report = GcReport()
    with store.lock.exclusive():
        refs = [target for targets in store.list_refs().values() for target in targets]
        trees: dict[str, TreeManifest | None] = {}
        actions = list(iter_action_files(store))
        kept = _kept_actions(store, actions, refs, keep_newest_per_kind, trees)
        live_trees, live_blobs = _reachable(store, kept, refs, trees)
        kept_names = {f"{m.kind}/{m.key}" for m in kept}
        report.actions_removed, freed_actions = _remove(
            (a.name, a.path) for a in actions if a.manifest is None or a.name not in kept_names
        )
        report.trees_removed, freed_trees = _remove(_unlisted(iter_tree_files(store), live_trees))
        report.blobs_removed, freed_blobs = _remove(_unlisted(iter_blob_files(store), live_blobs))
        report.tmp_removed, freed_tmp = _remove(_stale_tmp(store.tmp))
    report.bytes_freed = freed_actions + freed_trees + freed_blobs + freed_tmp
    report.actions_kept = len(kept)
    report.trees_kept = len(live_trees)
    report.blobs_kept = len(live_blobs)
    return report


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
    for digest in (t for t in refs if "/" not in t):
        named.append((digest, "tree" if store.has_tree(digest) else "blob"))
    for digest, kind in named:
        if kind == "blob":
            live_blobs.add(digest)
            continue
        live_trees.add(digest)
        tree = store.tree_or_none(digest, trees)
        if tree is not None:
            live_blobs.update(entry.digest for entry in tree.files() if entry.digest)
    return live_trees, live_blobs


def _unlisted(files: Iterable[tuple[str, Path]], live: set[str]) -> Iterator[tuple[str, Path]]:
    return ((name, path) for name, path in files if name not in live)


def _stale_tmp(tmp: Path) -> Iterator[tuple[str, Path]]:
    cutoff = time.time() - STALE_TMP_SECONDS
    for path in tmp.iterdir():
        if path.is_file() and path.stat().st_mtime < cutoff:
            yield path.name, path


def _remove(files: Iterable[tuple[str, Path]]) -> tuple[int, int]:
    """Delete each file; return how many were deleted and their total size."""
    count = freed = 0
    for _, path in files:
        size = file_size(path)
        discard(path)
        if not path.exists():
            count += 1
            freed += size
    return count, freed
