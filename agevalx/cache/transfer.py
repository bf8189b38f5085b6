"""Copy action entries and everything they reach between caches: push and pull.

`transfer(source, dest, roots)` works on any two `CacheBackend`s: it follows the roots'
closure on the source, asks the destination what it lacks, and copies only that, in
dependency order: blobs, then trees (whose blobs are then in place), then the entries.
Every object is re-hashed when read from the source and again when stored. A root whose
objects cannot all be copied is skipped and reported; its entry is never written, so the
destination never holds an entry naming a missing object.

`push(store, remote, roots)` and `pull(store, remote, roots)` are the two directions;
`all_entries` gives the roots of `--all`, and a caller that selects a dataset or a job
passes those entries' ids instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from agevalx.cache.backend import ActionId, CacheBackend, ObjectId, blobs_of
from agevalx.cache.closure import WORKERS, Closure, closure
from agevalx.cache.errors import CacheError
from agevalx.cache.manifest import ActionManifest
from agevalx.cache.remote.store import RemoteStore
from agevalx.cache.store import CacheStore
from agevalx.hashing import digest_json

_CONFIG = ConfigDict(extra="forbid")

_Item = TypeVar("_Item", ObjectId, ActionId)


class TransferProgress(Protocol):
    """Told how much there is to copy, then of each object or entry copied."""

    def start(self, total: int) -> None: ...

    def advance(self, nbytes: int) -> None: ...


class SkippedAction(BaseModel):
    """A root that was not copied, and why."""

    model_config = _CONFIG

    action: str
    """`kind/key`."""
    reason: str
    """What was missing, corrupt, untrusted or failed."""


class TransferReport(BaseModel):
    """What one push or pull moved."""

    model_config = _CONFIG

    direction: Literal["push", "pull", "copy"]
    """Which way the data went."""
    remote: str
    """The remote's name or URL."""
    roots: int = 0
    """Action entries asked for."""
    entries_copied: int = 0
    """Entries written at the destination."""
    entries_present: int = 0
    """Entries the destination already had."""
    objects_copied: int = 0
    """Blobs and trees written at the destination."""
    objects_present: int = 0
    """Blobs and trees the destination already had (not transferred)."""
    bytes_copied: int = 0
    """Bytes of the objects and entries written."""
    absent: int = 0
    """Roots the source has no (trusted) entry for."""
    skipped: list[SkippedAction] = Field(default_factory=list)
    """Roots found but not copied: some object they need could not be copied."""
    seconds: float = 0.0
    """Wall-clock time."""
    remembered: bool = False
    """A push found nothing to ask: this cache had pushed the same closure whole to the
    remote under its current GENERATION (see `RemoteStore.generation`)."""

    @property
    def ok(self) -> bool:
        """True if every root the source holds was copied or already there."""
        return not self.skipped


def push(
    store: CacheStore,
    remote: RemoteStore,
    roots: Iterable[ActionId],
    *,
    progress: TransferProgress | None = None,
    also: Iterable[str] = (),
    finish: Callable[[], bool] | None = None,
) -> TransferReport:
    """Upload the `roots` entries and what they reach that the remote lacks, then call
    `finish` (the caller's last writes, such as refs; False when they failed). A push that
    completes is remembered with the names in `also` (what `finish` writes); the same push
    again, under the remote's same GENERATION, asks the remote nothing else and calls no
    `finish`."""
    remote.require_writable()
    report = transfer(
        store, remote, roots, direction="push", progress=progress, also=also, finish=finish
    )
    remote.stats.add(write_errors=len(report.skipped))
    return report


def pull(
    store: CacheStore,
    remote: RemoteStore,
    roots: Iterable[ActionId],
    *,
    progress: TransferProgress | None = None,
) -> TransferReport:
    """Download the `roots` entries and what they reach that the local cache lacks."""
    return transfer(remote, store, roots, direction="pull", progress=progress)


def push_refs(store: CacheStore, remote: RemoteStore, names: Iterable[str] | None = None) -> int:
    """Copy local refs (all, or `names`) to the remote, replacing same-named ones there."""
    remote.require_writable()
    refs = store.list_refs()
    chosen = sorted(refs) if names is None else sorted(set(names) & set(refs))
    for name in chosen:
        remote.set_ref(name, refs[name])
    return len(chosen)


def all_entries(backend: CacheBackend) -> list[ActionId]:
    """Every entry a cache holds: the roots of `push --all` and `pull --all`."""
    return sorted(backend.entries())


def transfer(
    source: CacheBackend,
    dest: CacheBackend,
    roots: Iterable[ActionId],
    *,
    direction: Literal["push", "pull", "copy"] = "copy",
    progress: TransferProgress | None = None,
    also: Iterable[str] = (),
    finish: Callable[[], bool] | None = None,
) -> TransferReport:
    """Copy the `roots` entries from `source` to `dest` with everything they reach (see
    `push` for `also` and `finish`)."""
    started = time.monotonic()
    wanted = sorted(set(roots))
    remote = dest if direction == "push" else source
    report = TransferReport(direction=direction, remote=remote.location, roots=len(wanted))
    with source.in_use(), dest.in_use():
        try:
            _copy(source, dest, wanted, report, progress, also=sorted(also), finish=finish)
        except CacheError as exc:  # the remote went away mid-way: the rest is skipped
            done = {item.action for item in report.skipped}
            report.skipped += [
                SkippedAction(action=str(action), reason=exc.message)
                for action in wanted
                if str(action) not in done
            ]
    report.seconds = round(time.monotonic() - started, 3)
    return report


def _copy(
    source: CacheBackend,
    dest: CacheBackend,
    wanted: list[ActionId],
    report: TransferReport,
    progress: TransferProgress | None,
    *,
    also: list[str],
    finish: Callable[[], bool] | None,
) -> None:
    held = _held_whole(dest, wanted) if isinstance(dest, CacheStore) else Closure()
    found = closure(source, [action for action in wanted if action not in held.entries])
    report.absent = len(found.absent)
    skipped = dict(found.unusable)
    needed = found.objects
    pushed = _Pushed.ask(source, dest, found, also) if not skipped else None
    if pushed is not None and pushed.whole:
        report.objects_present, report.entries_present = len(needed), len(found.entries)
        report.remembered = True
        return
    with ThreadPoolExecutor(max_workers=1) as beside:  # the two questions go out together
        asked = beside.submit(_unusable_entries, dest, found.entries)
        missing = dest.missing_objects(needed)
        new_entries = asked.result()
    report.objects_present = len((needed - missing) | held.objects)
    report.entries_present = len(found.entries) - len(new_entries) + len(held.entries)
    if progress is not None:
        progress.start(len(missing) + len(new_entries))
    failed = _copy_objects(source, dest, found, missing, report, progress)
    writable: list[ActionId] = []
    for action in sorted(found.entries):
        broken = sorted(found.reach[action] & failed.keys())
        if broken:
            skipped[action] = failed[broken[0]]
        elif action in new_entries:
            writable.append(action)
    _copy_entries(dest, found, writable, skipped, report, progress)
    report.skipped = [
        SkippedAction(action=str(action), reason=reason)
        for action, reason in sorted(skipped.items())
    ]
    finished = finish() if finish is not None else True
    if pushed is not None and not skipped and finished:
        pushed.remember()


@dataclass
class _Pushed:
    """Whether a push's closure was found whole on the remote before, under the remote's
    current GENERATION (`RemoteStore.generation`): then nothing else is asked of it. The
    record is the local cache's (its stat cache), an accelerator like the stat cache: at
    worst, a wrong one makes a push leave out what the remote lost, never puts anything
    untrusted into a cache."""

    store: CacheStore
    remote: RemoteStore
    closure: str
    generation: str
    whole: bool

    @classmethod
    def ask(
        cls, source: CacheBackend, dest: CacheBackend, found: Closure, also: list[str]
    ) -> _Pushed | None:
        if not isinstance(source, CacheStore) or not isinstance(dest, RemoteStore):
            return None
        generation = dest.generation()  # before anything is asked: a gc after it replaces it
        if generation is None:
            return None
        names = sorted(map(str, found.entries)) + sorted(map(str, found.objects)) + also
        digest = digest_json(names)
        whole = source.stat_cache.pushed(dest.identity, digest) == generation
        return cls(source, dest, digest, generation, whole)

    def remember(self) -> None:
        self.store.stat_cache.remember_pushed(self.remote.identity, self.closure, self.generation)


def _held_whole(dest: CacheStore, wanted: list[ActionId]) -> Closure:
    """The `wanted` roots a local cache already holds with every object they reach, which a
    pull need not ask the remote about (a no-op pull reads nothing of the remote's entries)."""
    held = closure(dest, wanted)
    lacking = dest.missing_objects(held.objects)
    for action in [action for action, reach in held.reach.items() if reach & lacking]:
        del held.entries[action], held.reach[action]
    held.unusable.clear()  # asked of the remote like the absent ones
    return held


def _unusable_entries(
    dest: CacheBackend, manifests: dict[ActionId, ActionManifest]
) -> set[ActionId]:
    """The entries `dest` lacks or holds in a form it cannot use (those must be written)."""
    if isinstance(dest, RemoteStore):
        return dest.missing_entries(manifests)
    actions = list(manifests)
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        held = list(pool.map(dest.read_entry, actions))
    return {action for action, entry in zip(actions, held, strict=True) if entry is None}


def _copy_objects(
    source: CacheBackend,
    dest: CacheBackend,
    found: Closure,
    missing: set[ObjectId],
    report: TransferReport,
    progress: TransferProgress | None,
) -> dict[ObjectId, str]:
    """Copy blobs, then the trees whose blobs all made it; return what failed and why."""
    failed: dict[ObjectId, str] = {}

    def copy(obj: ObjectId) -> int | str:
        """Bytes written (0 if another writer got there first), or why it failed."""
        try:
            tree = found.trees.get(obj.digest) if obj.type == "tree" else None
            data = tree.canonical_bytes() if tree is not None else source.read_object(obj)
            written = len(data) if dest.write_object(obj, data) else 0
        except CacheError as exc:
            return exc.message
        if progress is not None:
            progress.advance(written)
        return written

    blobs = sorted(obj for obj in missing if obj.type == "blob")
    blobs_copied, blob_bytes = _run(copy, blobs, failed)
    trees: list[ObjectId] = []
    for obj in sorted(obj for obj in missing if obj.type == "tree"):
        lost = sorted(blobs_of(found.trees[obj.digest]) & failed.keys())
        if lost:
            failed[obj] = failed[lost[0]]
        else:
            trees.append(obj)
    trees_copied, tree_bytes = _run(copy, trees, failed)
    report.objects_copied += blobs_copied + trees_copied
    report.bytes_copied += blob_bytes + tree_bytes
    return failed


def _run(
    copy: Callable[[_Item], int | str], items: list[_Item], failed: dict[_Item, str]
) -> tuple[int, int]:
    """Copy `items` 16 at a time; what failed goes into `failed` with its reason. The number
    copied and their bytes."""
    copied = written = 0
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        for item, outcome in zip(items, pool.map(copy, items), strict=True):
            if isinstance(outcome, str):
                failed[item] = outcome
            else:
                copied += 1
                written += outcome
    return copied, written


def _copy_entries(
    dest: CacheBackend,
    found: Closure,
    actions: list[ActionId],
    skipped: dict[ActionId, str],
    report: TransferReport,
    progress: TransferProgress | None,
) -> None:
    """Write the entries (their objects are all there), concurrently as objects are: one at a
    time, a push of 1,000 attempts spent most of its time waiting on its 2,000 entry uploads."""

    def write(action: ActionId) -> int | str:
        """The entry's bytes once written, or why it was not."""
        manifest = found.entries[action]
        try:
            dest.write_entry(manifest)
        except CacheError as exc:
            return exc.message
        size = len(manifest.canonical_bytes())
        if progress is not None:
            progress.advance(size)
        return size

    copied, written = _run(write, actions, skipped)
    report.entries_copied += copied
    report.bytes_copied += written
