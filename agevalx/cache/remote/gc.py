"""Garbage collection of a remote: keep what its refs and newest entries reach.

The same rule as the local gc (`cache/gc.py`), over the remote's own refs (pushed with
`ageval cache push`): an entry is kept if a ref names it or it is among the newest complete
entries of its kind; every object a kept entry reaches, and every object a ref names, is
kept; the rest goes, entries first, then trees, then blobs. Entries that are malformed,
incomplete or (with a signing key) untrusted are garbage.

A remote has no gc lock: run it when nobody pushes (a pusher that found an object present
just before gc deleted it would file an entry naming a missing object, which readers then
treat as a miss). If the remote fails while gc reads it, nothing is deleted.
"""

from __future__ import annotations

from collections import defaultdict

from pydantic import BaseModel, ConfigDict

from agevalx.cache import layout
from agevalx.cache.backend import ActionId, ObjectId, blobs_of, read_tree
from agevalx.cache.closure import Closure, closure
from agevalx.cache.errors import CacheError
from agevalx.cache.gc import DEFAULT_KEEP_NEWEST
from agevalx.cache.remote.store import RemoteError, RemoteFile, RemoteStore


class RemoteGcReport(BaseModel):
    """What one remote gc kept and removed."""

    model_config = ConfigDict(extra="forbid")

    remote: str
    """The remote's name or URL."""
    entries_removed: int = 0
    """Action entries deleted (unreachable, incomplete, malformed or untrusted)."""
    trees_removed: int = 0
    """Tree manifests deleted."""
    blobs_removed: int = 0
    """Blobs deleted."""
    bytes_freed: int = 0
    """Total size of every deleted file."""
    entries_kept: int = 0
    """Action entries that remain."""
    trees_kept: int = 0
    """Tree manifests that remain."""
    blobs_kept: int = 0
    """Blobs that remain."""


def collect_remote_garbage(
    remote: RemoteStore, keep_newest_per_kind: int = DEFAULT_KEEP_NEWEST
) -> RemoteGcReport:
    """Delete from `remote` everything its refs and newest complete entries do not reach."""
    if keep_newest_per_kind < 0:
        raise ValueError("keep_newest_per_kind must be >= 0")
    remote.require_writable()
    refs = sorted({target for targets in remote.list_refs().values() for target in targets})
    entry_files = remote.list_area(layout.ACTIONS)
    tree_files = remote.list_area(layout.TREES)
    blob_files = remote.list_area(layout.OBJECTS)
    present = {ObjectId("tree", f.name) for f in tree_files} | {
        ObjectId("blob", f.name) for f in blob_files
    }
    found = closure(remote, remote.entries())
    kept = _kept_entries(found, present, refs, keep_newest_per_kind)
    live = set().union(*(found.reach[action] for action in kept)) | _named_by_refs(remote, refs)
    if not remote.available:
        raise RemoteError(
            "remote_unavailable",
            f"remote {remote.location} failed while gc read it; nothing was deleted",
            hint="try again when the remote is reachable",
        )
    report = RemoteGcReport(remote=remote.location)
    report.entries_removed, report.entries_kept, freed_entries = _sweep(
        remote, entry_files, {str(action) for action in kept}
    )
    report.trees_removed, report.trees_kept, freed_trees = _sweep(
        remote, tree_files, {obj.digest for obj in live if obj.type == "tree"}
    )
    report.blobs_removed, report.blobs_kept, freed_blobs = _sweep(
        remote, blob_files, {obj.digest for obj in live if obj.type == "blob"}
    )
    report.bytes_freed = freed_entries + freed_trees + freed_blobs
    return report


def _kept_entries(
    found: Closure, present: set[ObjectId], refs: list[str], keep_newest: int
) -> set[ActionId]:
    """Complete entries a ref names or that are among the newest of their kind."""
    by_kind: dict[str, list[ActionId]] = defaultdict(list)
    for action, reach in found.reach.items():
        if reach <= present:
            by_kind[action.kind].append(action)
    wanted = set(refs)
    kept: set[ActionId] = set()
    for actions in by_kind.values():
        actions.sort(key=lambda a: (found.entries[a].created, a.key), reverse=True)
        kept.update(actions[:keep_newest])
        kept.update(a for a in actions[keep_newest:] if str(a) in wanted)
    return kept


def _named_by_refs(remote: RemoteStore, refs: list[str]) -> set[ObjectId]:
    """Objects a ref names by bare digest: the blob, the tree and that tree's blobs."""
    live: set[ObjectId] = set()
    for digest in (target for target in refs if "/" not in target):
        live |= {ObjectId("blob", digest), ObjectId("tree", digest)}
        try:
            live |= blobs_of(read_tree(remote, digest))
        except CacheError:
            continue
    return live


def _sweep(remote: RemoteStore, files: list[RemoteFile], live: set[str]) -> tuple[int, int, int]:
    """Delete the files whose name is not in `live`: (removed, kept, bytes freed)."""
    doomed = [item for item in files if item.name not in live]
    remote.delete([item.path for item in doomed])
    return len(doomed), len(files) - len(doomed), sum(item.size for item in doomed)
