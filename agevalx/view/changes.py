"""File changes between two snapshots of /attempt/workspace or /attempt/home.

Snapshots are tree manifests in the cache (cache_layout.md, "Trees"); a changed text file
is shown as a unified diff of the two blobs, read (and verified) from the cache.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

from agevalx.cache.errors import CacheError
from agevalx.cache.manifest import TreeEntry, TreeManifest
from agevalx.cache.store import CacheStore

Change = Literal["added", "removed", "modified"]
TEXT_BYTES = 128 * 1024
DIFF_LINES = 400
DETAILED_FILES = 50


@dataclass(frozen=True)
class FileChange:
    """One path that differs between the two snapshots."""

    path: str
    change: Change
    before: TreeEntry | None
    after: TreeEntry | None
    diff: list[str] | None
    """Unified diff lines of a text file (clipped to `DIFF_LINES`); None when not shown."""
    note: str | None
    """Why no diff is shown (binary, too large, not in the cache), or what was clipped."""


def tree_changes(
    store: CacheStore, before: TreeManifest | None, after: TreeManifest
) -> list[FileChange]:
    """The files and symlinks added, removed or modified from `before` to `after` (None: an
    empty tree), in path order."""
    old = {entry.path: entry for entry in before.entries} if before else {}
    new = {entry.path: entry for entry in after.entries}
    changes: list[FileChange] = []
    for path in sorted(old.keys() | new.keys()):
        was, now = old.get(path), new.get(path)
        if was == now or all(entry.type == "dir" for entry in (was, now) if entry is not None):
            continue  # a directory is shown by the files that changed in it
        change: Change = "added" if was is None else "removed" if now is None else "modified"
        detailed = len(changes) < DETAILED_FILES
        diff, note = _diff(store, was, now) if detailed else (None, "not compared: many changes")
        changes.append(FileChange(path, change, was, now, diff, note))
    return changes


def _describe(entry: TreeEntry | None) -> str:
    if entry is None:
        return "nothing"
    if entry.type == "symlink":
        return f"a symlink to {entry.target}"
    return "a directory" if entry.type == "dir" else f"{entry.size} bytes"


def _diff(
    store: CacheStore, before: TreeEntry | None, after: TreeEntry | None
) -> tuple[list[str] | None, str | None]:
    sides = [entry for entry in (before, after) if entry is not None]
    if any(entry.type != "file" for entry in sides):
        return None, f"{_describe(before)} -> {_describe(after)}"
    if any(entry.size > TEXT_BYTES for entry in sides):
        return None, f"{_describe(before)} -> {_describe(after)}: too large to compare here"
    try:
        texts = [_text(store, entry) for entry in (before, after)]
    except CacheError:
        return None, "the file's content is not in the cache"
    old, new = texts
    if (old is None and before is not None) or (new is None and after is not None):
        return None, f"binary: {_describe(before)} -> {_describe(after)}"
    lines = list(
        difflib.unified_diff(
            (old or "").splitlines(), (new or "").splitlines(), "before", "after", lineterm=""
        )
    )
    if len(lines) > DIFF_LINES:
        return lines[:DIFF_LINES], f"{len(lines) - DIFF_LINES} more diff lines not shown"
    return lines, None


def _text(store: CacheStore, entry: TreeEntry | None) -> str | None:
    """The file's text; None for a binary file (or no file)."""
    if entry is None or entry.digest is None:
        return None
    data = store.get_bytes(entry.digest)
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
