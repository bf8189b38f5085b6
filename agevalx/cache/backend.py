"""The seam between the cache and where it is kept: an action cache plus a content store.

As in Bazel's remote cache client, one interface covers both halves: the action cache maps
`(kind, key)` to an action entry, and the content-addressed store holds blobs and tree
manifests by digest. `CacheStore` (the local disk) and `RemoteStore` (any fsspec URL)
implement it, so copying between them (`transfer.push` / `pull`) is one function whichever
way the data goes.

The contract every implementation keeps:
- `read_object` returns bytes that hash to the digest asked for (it re-hashes what it read)
  and, for a tree, a manifest that validates; anything else raises `cache_missing_object` or
  `cache_corrupt_object`.
- `write_object` is create-only: an object already stored under that digest counts as
  success. Trees are written after their blobs, entries after everything they name.
- `read_entry` returns a well-formed (and, where entries are signed, trusted) entry filed
  under exactly that kind and key, or None; it does not check that the objects are present.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Literal, Protocol

from agevalx.cache.errors import CacheError
from agevalx.cache.manifest import ActionManifest, TreeManifest

ObjectType = Literal["blob", "tree"]


@dataclass(frozen=True, order=True)
class ObjectId:
    """One object of the content-addressed store: a blob or a tree manifest, by digest."""

    type: ObjectType
    digest: str

    def __str__(self) -> str:
        return f"{self.type} {self.digest}"


@dataclass(frozen=True, order=True)
class ActionId:
    """One action entry: the node kind and the node key it is filed under."""

    kind: str
    key: str

    def __str__(self) -> str:
        return f"{self.kind}/{self.key}"

    @classmethod
    def of(cls, manifest: ActionManifest) -> ActionId:
        return cls(manifest.kind, manifest.key)


class ContentStore(Protocol):
    """Blobs and tree manifests, named by the xxh3-128 digest of their bytes."""

    def missing_objects(self, objects: Iterable[ObjectId]) -> set[ObjectId]:
        """The subset of `objects` this store does not hold."""
        ...

    def read_object(self, obj: ObjectId) -> bytes:
        """The object's bytes, verified against its digest (a tree is also validated)."""
        ...

    def write_object(self, obj: ObjectId, data: bytes) -> bool:
        """Store `data` under `obj` unless it is there; True if this call created it."""
        ...


class ActionCache(Protocol):
    """Action entries: node `(kind, key)` -> the outputs computing it produced."""

    def read_entry(self, action: ActionId) -> ActionManifest | None:
        """The entry filed under `action` if it is well-formed and trusted, else None."""
        ...

    def write_entry(self, manifest: ActionManifest) -> None:
        """File an entry; every object it names must already be stored."""
        ...

    def entries(self) -> Iterator[ActionId]:
        """Every validly named entry this cache holds (not checked for completeness)."""
        ...


class CacheBackend(ContentStore, ActionCache, Protocol):
    """An action cache plus a content store: the one interface of every cache location."""

    @property
    def location(self) -> str:
        """Where the cache is, for messages (a directory or a URL)."""
        ...

    def in_use(self) -> AbstractContextManager[None]:
        """Hold off garbage collection while objects are stored before the entry naming them."""
        ...


def read_tree(backend: ContentStore, digest: str) -> TreeManifest:
    """A tree manifest from `backend`, verified, validated and in canonical form."""
    data = backend.read_object(ObjectId("tree", digest))
    manifest = TreeManifest.from_bytes(data, source=f"tree {digest}")
    if manifest.digest != digest:
        raise CacheError(
            "cache_invalid_tree",
            f"tree {digest} is not in canonical form",
            hint="the manifest was not written by ageval; treat it as a cache miss",
        )
    return manifest


def outputs_of(manifest: ActionManifest) -> set[ObjectId]:
    """The objects an entry names directly (not the blobs inside its trees)."""
    return {ObjectId(output.type, output.digest) for output in manifest.outputs.values()}


def blobs_of(tree: TreeManifest) -> set[ObjectId]:
    """The blobs holding a tree's file contents."""
    return {ObjectId("blob", entry.digest) for entry in tree.files() if entry.digest}
