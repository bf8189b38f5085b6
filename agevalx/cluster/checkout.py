"""The dataset's files as one tree on the shared remote, so that workers need no checkout.

The driver stores the dataset directory (without `.ageval/`) as a tree in its cache and
uploads the blobs and the manifest the remote lacks (create-only). A worker copies what its
own cache lacks from the remote, each object re-hashed on the way, and restores the tree
once per digest into a directory of its own (paths validated, nothing escapes it).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from agevalx.cache.backend import ObjectId, blobs_of
from agevalx.cache.closure import WORKERS
from agevalx.cache.errors import CacheError
from agevalx.cache.manifest import TreeManifest
from agevalx.cache.remote.store import RemoteStore
from agevalx.cache.store import CacheStore

EXCLUDED = (".ageval", ".ageval/**")
"""Results and journals are the driver's: they never travel with the task files."""


def publish_checkout(store: CacheStore, remote: RemoteStore, root: Path) -> str:
    """Store `root`'s files as a tree and upload what the remote lacks; the tree digest."""
    manifest = store.put_tree(root, exclude=list(EXCLUDED))
    wanted = {*blobs_of(manifest), ObjectId("tree", manifest.digest)}
    missing = remote.missing_objects(wanted)
    _each(
        lambda obj: remote.write_object(obj, store.read_object(obj)),
        sorted(o for o in missing if o.type == "blob"),
    )
    if ObjectId("tree", manifest.digest) in missing:  # last: its blobs are all there
        remote.write_object(ObjectId("tree", manifest.digest), manifest.canonical_bytes())
    return manifest.digest


def checkout(store: CacheStore, remote: RemoteStore, digest: str, parent: Path) -> Path:
    """`parent/<digest>`: the dataset tree `digest`, fetched from `remote` into `store` where
    it lacks it and restored once (concurrent tasks of one machine share it)."""
    target = parent / digest
    if target.is_dir():
        return target
    tree = ObjectId("tree", digest)
    if not store.has_tree(digest):
        data = remote.read_object(tree)
        manifest = TreeManifest.from_bytes(data, source=f"tree {digest}")
        _each(
            lambda obj: store.write_object(obj, remote.read_object(obj)),
            sorted(store.missing_objects(blobs_of(manifest))),
        )
        store.write_object(tree, data)
    parent.mkdir(parents=True, exist_ok=True)
    staging = parent / f".{digest}.{uuid.uuid4().hex[:8]}"
    try:
        store.restore_tree(digest, staging)
        os.rename(staging, target)
    except OSError:
        if not target.is_dir():
            raise CacheError(
                "cluster_checkout_failed",
                f"the dataset tree {digest} could not be restored under {parent}",
                hint="check the worker's disk space and the permissions of its cache directory",
            ) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _each(copy: Callable[[ObjectId], object], objects: list[ObjectId]) -> None:
    """`copy` every object, `WORKERS` at once (a dataset of thousands of files is thousands of
    round trips to the remote); the first failure is raised once the others are done."""
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        for _ in pool.map(copy, objects):
            pass
