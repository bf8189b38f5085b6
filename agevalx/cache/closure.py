"""What a set of action entries reaches: the entries, their blobs and trees, their trees' blobs.

`closure(backend, roots)` is the root-set API the push, pull and remote gc build on: a
caller picks the roots (every entry, a dataset's, a job's) and gets every object they need.
Trees are read (verified) to find their blobs; an entry that cannot be followed is reported,
not raised, so one bad root never hides the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

from agevalx.cache.backend import (
    ActionId,
    CacheBackend,
    ObjectId,
    blobs_of,
    outputs_of,
    read_tree,
)
from agevalx.cache.errors import CacheError
from agevalx.cache.manifest import ActionManifest, TreeManifest

WORKERS = 16
"""Concurrent reads: remote reads are latency-bound, so more than the 2 cores."""

_T = TypeVar("_T")
_R = TypeVar("_R")


@dataclass
class Closure:
    """Every object reachable from some action entries, and the roots that were not."""

    entries: dict[ActionId, ActionManifest] = field(default_factory=dict)
    """The roots found, by id."""
    reach: dict[ActionId, frozenset[ObjectId]] = field(default_factory=dict)
    """For each entry found: every blob and tree it needs (a tree's blobs included)."""
    trees: dict[str, TreeManifest] = field(default_factory=dict)
    """Every tree manifest read on the way, by digest (verified)."""
    absent: set[ActionId] = field(default_factory=set)
    """Roots with no (trusted, well-formed) entry: ordinary misses."""
    unusable: dict[ActionId, str] = field(default_factory=dict)
    """Roots whose entry exists but names a tree that is missing or corrupt, and why."""

    @property
    def objects(self) -> set[ObjectId]:
        """The union of every entry's reach."""
        return set().union(*self.reach.values())


def closure(backend: CacheBackend, roots: Iterable[ActionId], *, workers: int = WORKERS) -> Closure:
    """Read the `roots` entries from `backend` and every tree they name."""
    wanted = sorted(set(roots))
    result = Closure()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        found = _each(pool, backend.read_entry, wanted)
        for action, entry in zip(wanted, found, strict=True):
            if isinstance(entry, ActionManifest):
                result.entries[action] = entry
            elif entry is None:
                result.absent.add(action)
            else:
                result.unusable[action] = entry.message
        digests = sorted(_tree_digests(result.entries.values()))
        read = _each(pool, lambda digest: read_tree(backend, digest), digests)
    problems: dict[str, str] = {}
    for digest, tree in zip(digests, read, strict=True):
        if isinstance(tree, TreeManifest):
            result.trees[digest] = tree
        else:
            problems[digest] = tree.message
    for action, manifest in list(result.entries.items()):
        reach = outputs_of(manifest)
        for obj in sorted(o for o in reach if o.type == "tree"):
            if obj.digest in problems:
                result.unusable[action] = problems[obj.digest]
                del result.entries[action]
                break
            reach |= blobs_of(result.trees[obj.digest])
        else:
            result.reach[action] = frozenset(reach)
    return result


def _tree_digests(manifests: Iterable[ActionManifest]) -> set[str]:
    return {obj.digest for m in manifests for obj in outputs_of(m) if obj.type == "tree"}


def _each(
    pool: ThreadPoolExecutor, function: Callable[[_T], _R], items: list[_T]
) -> list[_R | CacheError]:
    """`function` over `items` in the pool; a CacheError becomes that item's result."""

    def attempt(item: _T) -> _R | CacheError:
        try:
            return function(item)
        except CacheError as exc:
            return exc

    return list(pool.map(attempt, items))
