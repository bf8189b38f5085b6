"""Enumerate what a cache holds, for gc, verify and the du/ls helpers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from agevalx.cache import layout
from agevalx.cache.manifest import ActionManifest
from agevalx.cache.store import CacheStore, read_action


@dataclass(frozen=True)
class ActionFile:
    """One file under `actions/`, parsed if it is a well-formed entry for its path."""

    kind: str
    key: str
    path: Path
    manifest: ActionManifest | None

    @property
    def name(self) -> str:
        return f"{self.kind}/{self.key}"


def iter_action_files(store: CacheStore, kind: str | None = None) -> Iterator[ActionFile]:
    """Every action file (of one kind, if given); malformed ones have no manifest."""
    kinds = [layout.check_kind(kind)] if kind is not None else layout.iter_action_kinds(store.root)
    for name in kinds:
        for key, path in layout.iter_sharded(store.root / layout.ACTIONS / name):
            valid = layout.DIGEST_RE.fullmatch(key) is not None
            yield ActionFile(name, key, path, read_action(path, name, key) if valid else None)


def iter_blob_files(store: CacheStore) -> Iterator[tuple[str, Path]]:
    """`(name, path)` for every file in the blob area."""
    return layout.iter_sharded(layout.object_dir(store.root))


def iter_tree_files(store: CacheStore) -> Iterator[tuple[str, Path]]:
    """`(name, path)` for every file in the tree area."""
    return layout.iter_sharded(layout.tree_dir(store.root))


def file_size(path: Path) -> int:
    """Size in bytes, 0 if the file vanished."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0
