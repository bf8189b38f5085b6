"""Snapshots of /attempt/workspace and /attempt/home into the cache, and checkpoint nodes."""

from __future__ import annotations

import posixpath
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path

from agevalx.cache.manifest import ActionManifest, OutputRef
from agevalx.cache.store import CacheStore
from agevalx.environments.container import HOME, WORKSPACE, AttemptContainer
from agevalx.graph.keys import node_key
from agevalx.graph.rules import load_rules
from agevalx.hashing import digest_json
from agevalx.runner.incremental import take_trees


@dataclass(frozen=True)
class SnapshotRoots:
    """The container directories a checkpoint snapshots (and a restore replaces)."""

    workspace: str = WORKSPACE
    """Where the agent works: its changes are the attempt's outputs."""
    home: str = HOME
    """The agent's HOME (its own state: sessions, configuration, turn counters)."""


@dataclass(frozen=True)
class Snapshot:
    """Tree digests of the two attempt directories."""

    workspace: str
    home: str
    size: int
    files_read: int = 0
    """Files copied out of the container to take it (the others were unchanged)."""
    bytes_read: int = 0


def snapshot(
    container: AttemptContainer,
    store: CacheStore,
    roots: SnapshotRoots = SnapshotRoots(),
    *,
    incremental: bool = True,
) -> Snapshot:
    """Store both directories as trees. Incrementally (the default), files unchanged since
    this container's previous snapshot are not read again; the trees are the same as with
    `incremental=False`, which re-reads everything (see `agevalx.runner.incremental`)."""
    workspace, home = take_trees(
        container, store, [roots.workspace, roots.home], incremental=incremental
    )
    return Snapshot(
        workspace=workspace.manifest.digest,
        home=home.manifest.digest,
        size=workspace.manifest.total_size + home.manifest.total_size,
        files_read=workspace.files_read + home.files_read,
        bytes_read=workspace.bytes_read + home.bytes_read,
    )


def restore(
    container: AttemptContainer,
    store: CacheStore,
    workspace: str,
    home: str | None,
    roots: SnapshotRoots = SnapshotRoots(),
) -> None:
    """Replace the workspace and home directories with cached snapshots (`home` None: only
    the workspace, as an isolated scoring host gets it)."""
    trees = [(workspace, roots.workspace)] + ([(home, roots.home)] if home is not None else [])
    with tempfile.TemporaryDirectory(prefix="ageval-restore-") as scratch:
        for index, (digest, path) in enumerate(trees):
            local = Path(scratch) / str(index) / posixpath.basename(path.rstrip("/"))
            store.restore_tree(digest, local)
            quoted, parent = shlex.quote(path), shlex.quote(posixpath.dirname(path) or "/")
            container.root_exec(f"rm -rf {quoted} && mkdir -p {parent}")
            container.put_directory(local, path)


def store_checkpoint(
    store: CacheStore, parent: tuple[str, str], step: dict[str, object], taken: Snapshot
) -> str:
    """Store a checkpoint node chained to `parent` (`("run", key)` or `("checkpoint", key)`)."""
    rule = load_rules()["checkpoint"]
    key = node_key(rule, {"request": {"step_action": digest_json(step)}}, {parent[0]: [parent[1]]})
    outputs = {
        "workspace": OutputRef(digest=taken.workspace, type="tree"),
        "home": OutputRef(digest=taken.home, type="tree"),
    }
    with store.in_use():
        store.put_action(
            ActionManifest.create("checkpoint", key, outputs, {"parent": list(parent)})
        )
    return key
