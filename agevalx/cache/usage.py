"""Disk usage per area and a listing of action entries (`ageval cache du` / `ls`)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agevalx.cache import layout
from agevalx.cache.manifest import ActionManifest, TreeManifest
from agevalx.cache.scan import file_size, iter_action_files, iter_blob_files, iter_tree_files
from agevalx.cache.store import CacheStore

_CONFIG = ConfigDict(extra="forbid")


class AreaUsage(BaseModel):
    """Files and bytes in one part of the cache."""

    model_config = _CONFIG

    files: int = 0
    """Number of files."""
    bytes: int = 0
    """Their total size."""


class CacheUsage(BaseModel):
    """Disk usage of a cache, per area."""

    model_config = _CONFIG

    root: str
    """The cache directory."""
    objects: AreaUsage
    """Blobs under `objects/`."""
    trees: AreaUsage
    """Tree manifests under `trees/`."""
    actions: dict[str, AreaUsage] = Field(default_factory=dict)
    """Action entries, per kind."""
    refs: int = 0
    """Number of refs (gc roots)."""
    tmp: AreaUsage
    """Staging files under `tmp/` (in-flight writes or crash leftovers)."""
    stat_cache_bytes: int = 0
    """Size of the stat cache database (and its WAL files)."""

    @property
    def total_bytes(self) -> int:
        """Everything above added up."""
        areas = [self.objects, self.trees, self.tmp, *self.actions.values()]
        return sum(area.bytes for area in areas) + self.stat_cache_bytes


class ActionInfo(BaseModel):
    """One action entry as `ageval cache ls` shows it."""

    model_config = _CONFIG

    kind: str
    """Node kind."""
    key: str
    """Node key."""
    created: datetime
    """When the entry was written."""
    outputs: int
    """Number of named outputs."""
    output_bytes: int
    """Bytes of content the outputs hold (blob sizes; file sizes of trees)."""
    complete: bool
    """Whether every object it names is present (whether it is a hit)."""


def disk_usage(store: CacheStore) -> CacheUsage:
    """Count files and bytes in each area of the cache."""
    actions: dict[str, AreaUsage] = {}
    for action in iter_action_files(store):
        _add(actions.setdefault(action.kind, AreaUsage()), [action.path])
    stat_db = store.root / layout.STAT_CACHE_FILE
    stat_files = [stat_db, *(stat_db.with_name(stat_db.name + s) for s in ("-wal", "-shm"))]
    return CacheUsage(
        root=str(store.root),
        objects=_add(AreaUsage(), (path for _, path in iter_blob_files(store))),
        trees=_add(AreaUsage(), (path for _, path in iter_tree_files(store))),
        actions=actions,
        refs=len(list((store.root / layout.REFS).iterdir())),
        tmp=_add(AreaUsage(), store.tmp.iterdir()),
        stat_cache_bytes=sum(file_size(path) for path in stat_files),
    )


def _add(area: AreaUsage, paths: Iterable[Path]) -> AreaUsage:
    for path in paths:
        area.files += 1
        area.bytes += file_size(path)
    return area


def list_actions(store: CacheStore, kind: str | None = None) -> list[ActionInfo]:
    """Well-formed action entries (of one kind, if given), newest first within each kind."""
    trees: dict[str, TreeManifest | None] = {}
    infos = [
        _info(store, action.manifest, trees)
        for action in iter_action_files(store, kind)
        if action.manifest is not None
    ]
    infos.sort(key=lambda info: info.created, reverse=True)
    infos.sort(key=lambda info: info.kind)
    return infos


def _info(
    store: CacheStore, manifest: ActionManifest, trees: dict[str, TreeManifest | None]
) -> ActionInfo:
    size = 0
    for output in manifest.outputs.values():
        if output.type == "blob":
            size += file_size(layout.object_path(store.root, output.digest))
        elif (tree := store.tree_or_none(output.digest, trees)) is not None:
            size += tree.total_size
    return ActionInfo(
        kind=manifest.kind,
        key=manifest.key,
        created=manifest.created,
        outputs=len(manifest.outputs),
        output_bytes=size,
        complete=not store.missing_outputs(manifest, trees),
    )
