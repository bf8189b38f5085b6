"""The content-addressed store: blobs, tree manifests, action entries and refs.

See `cache_layout.md` for the on-disk format. Every write is staged under `tmp/`,
fsynced and renamed into place; blobs and trees are written before the action entry
that names them. Every read re-hashes what it returns; a corrupt object is removed and
reported as `cache_corrupt_object`, so the next lookup is an ordinary miss.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

import xxhash
from pydantic import ValidationError

from agevalx.cache import layout
from agevalx.cache.atomic import ensure_dir, staged, unwritable, write_atomic
from agevalx.cache.backend import ActionId, ObjectId
from agevalx.cache.errors import CacheError
from agevalx.cache.locking import CacheLock
from agevalx.cache.manifest import ActionManifest, RefFile, TreeEntry, TreeManifest
from agevalx.cache.statcache import StatCache
from agevalx.cache.streams import CHUNK, pump, write_all
from agevalx.cache.tree import HASH_WORKERS, hash_tree
from agevalx.hashing import digest_bytes

OBJECT_MODE = 0o444
ENTRY_MODE = 0o644
SMALL_READ = 1 << 16
"""Bytes per read of `read_small`: an action entry is a few hundred."""
LIST_SHARD_AFTER = 8
"""Checks of blobs in one shard directory before `PresentObjects` considers listing it."""
DIRECTORY_BYTES_PER_CHECK = 200
"""A shard directory is listed once it has been asked about `st_size / this` times: a listing
costs about a fifth of a stat per name, and a name takes about 40 bytes of directory (ext4),
so the listing costs no more than the stats already made."""


class PresentObjects(set[tuple[str, str]]):
    """The `present` memo of `missing_outputs`: outputs found complete, as `(type, digest)`,
    while the caller holds `in_use()` (gc removes nothing meanwhile).

    It also lists a blob shard directory once it was asked about often enough that the
    listing costs less than the stats it saves (a plan checks every distinct blob its
    entries name: tens of thousands). A listed name is only ever evidence that a blob is
    there, never that it is absent: a name the listing lacks (a blob stored since, as a
    remote pull does) is looked up as before.
    """

    def __init__(self) -> None:
        super().__init__()
        self.asked: dict[str, int] = {}
        self.threshold: dict[str, int] = {}
        self.listed: dict[str, frozenset[str]] = {}

    def listing(self, objects: str, shard: str) -> frozenset[str] | None:
        """The regular files of shard directory `shard` under `objects`, once listing it pays."""
        listed = self.listed.get(shard)
        if listed is not None:
            return listed
        asked = self.asked[shard] = self.asked.get(shard, 0) + 1
        if asked < LIST_SHARD_AFTER:
            return None
        directory = f"{objects}/{shard}"
        try:
            if shard not in self.threshold:
                size = os.stat(directory).st_size
                self.threshold[shard] = max(LIST_SHARD_AFTER, size // DIRECTORY_BYTES_PER_CHECK)
            if asked < self.threshold[shard]:
                return None
            with os.scandir(directory) as entries:
                listed = frozenset(entry.name for entry in entries if entry.is_file())
        except OSError:
            listed = frozenset()
        self.listed[shard] = listed
        return listed


class CacheStore:
    """One cache directory. Safe to share between threads and processes.

    This is the local-disk implementation of `CacheBackend` (the action cache plus the
    content store, see `backend.py`); the methods above that seam (`put_tree`,
    `restore_tree`, `get_action`, refs, ...) are what the rest of ageval calls.
    """

    def __init__(self, root: Path) -> None:
        self.root = root.absolute()
        self.tmp = self.root / layout.TMP
        self._open_layout()
        self.lock = CacheLock(self.root / layout.LOCK_FILE)
        self.lock.check()
        self.stat_cache = StatCache(self.root / layout.STAT_CACHE_FILE)
        """Digest memo for `put_tree`, kept in this cache root."""
        self._objects = os.fspath(layout.object_dir(self.root))
        self._trees = os.fspath(layout.tree_dir(self.root))
        self._actions = os.fspath(self.root / layout.ACTIONS)
        """The blob, tree and entry directories as strings: a hit checks every blob it names,
        and building a Path per check cost more than the check."""

    @property
    def instance(self) -> str:
        """This cache's random id (`INSTANCE`), made the first time it is asked for; racing
        processes agree on the first one written."""
        path = self.root / layout.INSTANCE_FILE
        try:
            return path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise unwritable(exc, path) from exc
        fd, staging = tempfile.mkstemp(dir=self.tmp, prefix="instance-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(uuid.uuid4().hex + "\n")
            with contextlib.suppress(FileExistsError):  # another process made it first
                os.link(staging, path)
        except OSError as exc:
            raise unwritable(exc, path) from exc
        finally:
            Path(staging).unlink(missing_ok=True)
        return path.read_text(encoding="utf-8").strip()

    def _open_layout(self) -> None:
        version_file = self.root / layout.VERSION_FILE
        try:
            found = version_file.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            found = None
        except OSError as exc:
            raise unwritable(exc, version_file) from exc
        if found is not None and found != layout.LAYOUT_VERSION:
            raise CacheError(
                "cache_version_mismatch",
                f"cache layout is {found!r}; this ageval reads {layout.LAYOUT_VERSION!r}",
                file=str(version_file),
                hint="use another --cache-dir, or upgrade ageval",
            )
        for area in (layout.object_dir(self.root), layout.tree_dir(self.root)):
            ensure_dir(area)
        for name in (layout.ACTIONS, layout.REFS, layout.TMP):
            ensure_dir(self.root / name)
        self._drop_old_stat_cache()
        if found is None:
            write_atomic(self.tmp, version_file, f"{layout.LAYOUT_VERSION}\n".encode())

    def _drop_old_stat_cache(self) -> None:
        """Remove the stat cache from its old place at the root (its digests are made again
        on use), unless an older ageval still has it open (SQLite keeps its -wal and -shm
        beside it while any connection is open) or the root cannot be written."""
        moved = self.root / layout.OLD_STAT_CACHE_FILE
        if not moved.exists():
            return
        if any(moved.with_name(moved.name + suffix).exists() for suffix in ("-wal", "-shm")):
            return
        with contextlib.suppress(OSError):
            moved.unlink()

    def in_use(self) -> AbstractContextManager[None]:
        """Hold the shared gc lock: gc waits until the block ends.

        Wrap every sequence "store blobs/trees, then the action entry naming them" (and
        "look up an action, then restore its outputs") in one `in_use()` block.
        """
        return self.lock.shared()

    def close(self) -> None:
        self.stat_cache.close()

    def __enter__(self) -> CacheStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # Blobs

    def put_bytes(self, data: bytes) -> str:
        """Store `data` as a blob and return its digest."""
        digest = digest_bytes(data)
        dest = layout.object_path(self.root, digest)
        with self.in_use():
            if not dest.exists():
                write_atomic(self.tmp, dest, data, OBJECT_MODE)
        return digest

    def put_file(self, path: Path) -> str:
        """Store a file's bytes as a blob, hashing while copying; return the digest."""
        with self.in_use():
            return self._put_path(path, follow_symlinks=True)

    def _put_path(self, path: Path, *, follow_symlinks: bool) -> str:
        flags = os.O_RDONLY | os.O_CLOEXEC | (0 if follow_symlinks else os.O_NOFOLLOW)
        with staged(self.tmp) as staging:
            try:
                src = os.open(path, flags)
                try:
                    digest, _ = pump(src, staging.write)
                finally:
                    os.close(src)
            except OSError as exc:
                raise CacheError(
                    "cache_source_unreadable",
                    f"cannot read {path}: {exc.strerror or exc}",
                    file=str(path),
                ) from exc
            dest = layout.object_path(self.root, digest)
            if not dest.exists():
                staging.commit(dest, OBJECT_MODE)
        return digest

    def put_stream(self, read: Callable[[int], bytes]) -> tuple[str, int]:
        """Store what `read(n)` returns until it returns b"" as a blob, hashing while
        copying; the digest and the number of bytes."""
        hasher = xxhash.xxh3_128()
        total = 0
        with self.in_use(), staged(self.tmp) as staging:
            while chunk := read(CHUNK):
                hasher.update(chunk)
                staging.write(chunk)
                total += len(chunk)
            digest = str(hasher.hexdigest())
            dest = layout.object_path(self.root, digest)
            if not dest.exists():
                staging.commit(dest, OBJECT_MODE)
        return digest, total

    def has_blob(self, digest: str) -> bool:
        return os.path.isfile(layout.sharded_name(self._objects, digest))

    def get_bytes(self, digest: str) -> bytes:
        """A blob's bytes, verified against its digest."""
        return self._read_verified(layout.sharded_name(self._objects, digest), digest)

    def open_blob(self, digest: str) -> BinaryIO:
        """An open binary file positioned at 0, whose content was verified first."""
        path = layout.object_path(self.root, digest)
        handle = self._open_object(path, digest)
        try:
            found, _ = pump(handle.fileno())
            handle.seek(0)
        except BaseException:
            handle.close()
            raise
        if found != digest:
            handle.close()
            raise self._corrupt(path, digest)
        return handle

    def export_blob(self, digest: str, dest: Path) -> None:
        """Write a blob to `dest` (replacing it atomically), verifying while copying."""
        try:
            fd, name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.")
        except OSError as exc:
            raise unwritable(exc, dest) from exc
        staging = Path(name)
        try:
            try:
                self._copy_verified(digest, fd)
            finally:
                os.close(fd)
            os.chmod(staging, 0o644)
            os.replace(staging, dest)
        except OSError as exc:
            raise unwritable(exc, dest) from exc
        finally:
            staging.unlink(missing_ok=True)

    def _copy_verified(self, digest: str, out_fd: int) -> None:
        path = layout.object_path(self.root, digest)
        with self._open_object(path, digest) as handle:
            found, _ = pump(handle.fileno(), lambda chunk: write_all(out_fd, chunk))
        if found != digest:
            raise self._corrupt(path, digest)

    def _open_object(self, path: Path, digest: str) -> BinaryIO:
        try:
            return path.open("rb", buffering=0)
        except FileNotFoundError as exc:
            raise _missing(digest) from exc

    def _read_verified(self, path: Path | str, digest: str) -> bytes:
        try:
            data = read_small(path)
        except FileNotFoundError as exc:
            raise _missing(digest) from exc
        if digest_bytes(data) != digest:
            raise self._corrupt(path, digest)
        return data

    def _corrupt(self, path: Path | str, digest: str) -> CacheError:
        """Remove a corrupt object (a later lookup misses) and describe it."""
        discard(Path(path))
        return CacheError(
            "cache_corrupt_object",
            f"object {digest} does not match its digest; it was removed",
            file=str(path),
            hint="treat it as a cache miss: the node will be recomputed",
        )

    # Trees

    def put_tree(
        self,
        src: Path,
        *,
        include: Sequence[str] | None = None,
        exclude: Sequence[str] | None = None,
        transient: bool = False,
    ) -> TreeManifest:
        """Store every file under `src` and its manifest; return the manifest.

        Symlinks are recorded, never followed. Raises `cache_source_changed` if a file
        changes between hashing and copying. A `transient` tree is a scratch copy deleted
        next (extracted from a container): every file is new, so the stat cache is neither
        asked nor told about it.
        """
        stat_cache = None if transient else self.stat_cache
        manifest = hash_tree(src, include=include, exclude=exclude, stat_cache=stat_cache)
        with self.in_use():
            by_digest = {_digest(entry): entry for entry in manifest.files()}
            missing = [entry for digest, entry in by_digest.items() if not self.has_blob(digest)]
            with ThreadPoolExecutor(max_workers=HASH_WORKERS) as pool:
                list(pool.map(lambda entry: self._put_tree_file(src, entry), missing))
            self.put_tree_manifest(manifest)
        return manifest

    def _put_tree_file(self, src: Path, entry: TreeEntry) -> None:
        digest = self._put_path(src / entry.path, follow_symlinks=False)
        if digest != entry.digest:
            raise CacheError(
                "cache_source_changed",
                f"{entry.path} changed while it was being stored",
                file=str(src / entry.path),
                hint="make sure nothing writes to the tree while it is snapshotted",
            )

    def put_tree_manifest(self, manifest: TreeManifest) -> str:
        """Store a manifest whose blobs are already stored; return the tree digest."""
        with self.in_use():
            missing = sorted({d for d in map(_digest, manifest.files()) if not self.has_blob(d)})
            if missing:
                raise _missing(", ".join(missing))
            dest = layout.tree_path(self.root, manifest.digest)
            if not dest.exists():
                write_atomic(self.tmp, dest, manifest.canonical_bytes(), OBJECT_MODE)
        return manifest.digest

    def has_tree(self, digest: str) -> bool:
        return layout.tree_path(self.root, digest).is_file()

    def get_tree(self, digest: str) -> TreeManifest:
        """A stored manifest, verified against its digest and validated."""
        path = layout.sharded_name(self._trees, digest)
        data = self._read_verified(path, digest)
        return TreeManifest.from_bytes(data, source=path)

    def restore_tree(self, digest: str, dest: Path) -> TreeManifest:
        """Materialise a tree into `dest`, which must be missing or empty.

        Manifests may come from an untrusted remote: entries are validated (no absolute
        paths, no `..`, nothing below a symlink), every parent is re-resolved before a
        write, files are created with O_EXCL|O_NOFOLLOW, and symlinks are made last.
        """
        with self.in_use():
            manifest = self.get_tree(digest)
            base = _empty_target(dest)
            try:
                for entry in manifest.entries:
                    if entry.type != "symlink":
                        self._restore_entry(base, entry)
                for entry in manifest.entries:
                    if entry.type == "symlink":
                        os.symlink(entry.target or "", _inside(base, entry.path))
            except OSError as exc:
                raise unwritable(exc, dest) from exc
        return manifest

    def _restore_entry(self, base: str, entry: TreeEntry) -> None:
        target = _inside(base, entry.path)
        if entry.type == "dir":
            os.mkdir(target, 0o755)
            return
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(target, flags, 0o600)
        try:
            self._copy_verified(_digest(entry), fd)
            os.fchmod(fd, entry.mode)
        finally:
            os.close(fd)

    # Actions

    def put_action(self, manifest: ActionManifest) -> None:
        """Write an action entry; every blob and tree it names must already be stored."""
        self._store_action(manifest)

    def _store_action(self, manifest: ActionManifest) -> None:
        with self.in_use():
            missing = self.missing_outputs(manifest)
            if missing:
                raise CacheError(
                    "cache_missing_object",
                    f"action {manifest.kind}/{manifest.key} names objects not in the cache: "
                    + ", ".join(missing),
                    hint="store blobs and trees before the action entry that names them",
                )
            dest = layout.action_path(self.root, manifest.kind, manifest.key)
            write_atomic(self.tmp, dest, manifest.canonical_bytes(), ENTRY_MODE)

    def get_action(
        self, kind: str, key: str, present: set[tuple[str, str]] | None = None
    ) -> ActionManifest | None:
        """The entry for node `key` of `kind` if it is a complete hit, else None.

        A hit needs the entry to parse and validate and every blob and tree it names
        (and every blob of those trees) to be present. Anything else is a miss. `present`
        memoises the objects found complete across lookups (see `missing_outputs`).
        """
        path = layout.action_name(self._actions, kind, key)
        with self.in_use():
            manifest = read_action(path, kind, key)
            if manifest is None or self.missing_outputs(manifest, present=present):
                return None
        return manifest

    def missing_outputs(
        self,
        manifest: ActionManifest,
        trees: dict[str, TreeManifest | None] | None = None,
        *,
        present: set[tuple[str, str]] | None = None,
    ) -> list[str]:
        """Digests the entry needs that are absent, truncated or (for trees) corrupt.

        `trees` memoises parsed manifests across calls (gc and verify pass one). `present`
        holds the outputs found complete, as `(type, digest)` (a tree: with every blob it
        names): they are not checked again. Only a caller holding `in_use()` across all its
        calls may pass one (planning does), since gc cannot remove anything meanwhile; a
        `PresentObjects` also lists the shard directories asked about most.
        """
        trees = {} if trees is None else trees
        missing: list[str] = []
        for output in manifest.outputs.values():
            found = (output.type, output.digest)
            if present is not None and found in present:
                continue
            absent = self._missing_from(output.type, output.digest, trees, present)
            if not absent and present is not None:
                present.add(found)
            missing.extend(absent)
        return missing

    def _missing_from(
        self,
        type: str,
        digest: str,
        trees: dict[str, TreeManifest | None],
        present: set[tuple[str, str]] | None = None,
    ) -> list[str]:
        if type == "blob":
            return [] if self._has_blob_file(digest, present) else [digest]
        tree = self.tree_or_none(digest, trees)
        if tree is None:
            return [digest]
        return [_digest(e) for e in tree.files() if not self._blob_intact(e)]

    def _has_blob_file(self, digest: str, present: set[tuple[str, str]] | None) -> bool:
        """Whether blob `digest` is a file, from `present`'s listing of its shard when it
        lists the name. A parsed entry's digests passed its model's pattern: no second check."""
        if isinstance(present, PresentObjects):
            listed = present.listing(self._objects, digest[:2])
            if listed is not None and digest[2:] in listed:
                return True
        return os.path.isfile(layout.shard_of(self._objects, digest))

    def tree_or_none(
        self, digest: str, trees: dict[str, TreeManifest | None]
    ) -> TreeManifest | None:
        """A verified manifest, or None if it is missing or corrupt; memoised in `trees`."""
        if digest not in trees:
            try:
                trees[digest] = self.get_tree(digest)
            except CacheError:
                trees[digest] = None
        return trees[digest]

    def _blob_intact(self, entry: TreeEntry) -> bool:
        try:
            path = layout.shard_of(self._objects, _digest(entry))
            return os.stat(path).st_size == entry.size
        except FileNotFoundError:
            return False

    # The backend seam (`CacheBackend`): what `transfer` copies between caches

    @property
    def location(self) -> str:
        return str(self.root)

    def missing_objects(self, objects: Iterable[ObjectId]) -> set[ObjectId]:
        """The blobs and trees of `objects` that have no file here."""
        return {obj for obj in objects if not self._has_object(obj)}

    def _has_object(self, obj: ObjectId) -> bool:
        return self.has_blob(obj.digest) if obj.type == "blob" else self.has_tree(obj.digest)

    def read_object(self, obj: ObjectId) -> bytes:
        """A blob's or a tree manifest's bytes, verified against the digest."""
        if obj.type == "blob":
            return self.get_bytes(obj.digest)
        path = layout.tree_path(self.root, obj.digest)
        data = self._read_verified(path, obj.digest)
        TreeManifest.from_bytes(data, source=str(path))
        return data

    def write_object(self, obj: ObjectId, data: bytes) -> bool:
        """Store verified bytes as a blob or a tree (whose blobs must be stored first).

        Returns whether the object was new here. Bytes that do not hash to the digest are
        refused with `cache_corrupt_object` and nothing is written.
        """
        if digest_bytes(data) != obj.digest:
            raise CacheError(
                "cache_corrupt_object",
                f"{obj} does not match its digest; it was not stored",
                hint="the source holds a corrupt copy; treat it as a cache miss",
            )
        if self._has_object(obj):
            return False
        if obj.type == "blob":
            self.put_bytes(data)
        else:
            manifest = TreeManifest.from_bytes(data, source=str(obj))
            if manifest.digest != obj.digest:
                raise CacheError("cache_invalid_tree", f"{obj} is not in canonical form")
            self.put_tree_manifest(manifest)
        return True

    def read_entry(self, action: ActionId) -> ActionManifest | None:
        """The entry filed under `action` if it parses, whether or not it is complete."""
        path = layout.action_path(self.root, action.kind, action.key)
        return read_action(path, action.kind, action.key)

    def write_entry(self, manifest: ActionManifest) -> None:
        """File an entry copied from another cache (the objects must be here already)."""
        self._store_action(manifest)

    def entries(self) -> Iterator[ActionId]:
        """Every validly named action file, kind by kind."""
        for kind in layout.iter_action_kinds(self.root):
            for key, _ in layout.iter_sharded(self.root / layout.ACTIONS / kind):
                if layout.DIGEST_RE.fullmatch(key):
                    yield ActionId(kind, key)

    # Refs

    def set_ref(self, name: str, targets: Iterable[str]) -> None:
        """Make `name` a gc root keeping `targets` (`kind/key` entries or digests)."""
        path = layout.ref_path(self.root, name)
        try:
            ref = RefFile(targets=tuple(sorted(set(targets))))
        except ValidationError as exc:
            raise CacheError(
                "cache_invalid_name",
                f"ref {name!r}: targets must be 'kind/key' or a digest: {exc}",
                field="targets",
            ) from exc
        write_atomic(self.tmp, path, ref.canonical_bytes(), ENTRY_MODE)

    def delete_ref(self, name: str) -> bool:
        """Remove a ref; return whether it existed."""
        path = layout.ref_path(self.root, name)
        existed = path.exists()
        path.unlink(missing_ok=True)
        return existed

    def list_refs(self) -> dict[str, tuple[str, ...]]:
        """Every ref and its targets. A malformed ref raises `cache_invalid_ref`."""
        refs: dict[str, tuple[str, ...]] = {}
        for path in sorted((self.root / layout.REFS).iterdir()):
            if layout.REF_NAME_RE.fullmatch(path.name):
                refs[path.name] = _read_ref(path).targets
        return refs


def read_action(path: Path | str, kind: str, key: str) -> ActionManifest | None:
    """Parse an action file; None if it is missing, malformed or names another node."""
    try:
        manifest = ActionManifest.from_bytes(read_small(path), source=str(path))
    except (OSError, CacheError):
        return None
    if manifest.kind != kind or manifest.key != key:
        return None
    return manifest


def read_small(path: Path | str) -> bytes:
    """A file's bytes through one descriptor and, for a small one, one read: planning reads
    an entry per node and a no-op run a blob per view, and a buffered file object (what
    `Path.read_bytes` opens) cost twice the read. A fifo planted in the cache reads as empty
    (it is not waited on)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        data = os.read(fd, SMALL_READ)
        if len(data) < SMALL_READ:
            return data
        chunks = [data]
        while chunk := os.read(fd, CHUNK):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def discard(path: Path) -> None:
    """Remove a file if possible; a file that cannot be removed stays a miss anyway."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        return


def _read_ref(path: Path) -> RefFile:
    try:
        return RefFile.model_validate_json(path.read_bytes())
    except (OSError, ValidationError) as exc:
        raise CacheError(
            "cache_invalid_ref",
            f"ref {path.name} is unreadable or malformed: {exc}",
            file=str(path),
            hint="fix or delete the ref file; gc refuses to run without knowing its roots",
        ) from exc


def _digest(entry: TreeEntry) -> str:
    assert entry.digest is not None, "file entries always carry a digest"
    return entry.digest


def _missing(digest: str) -> CacheError:
    return CacheError(
        "cache_missing_object",
        f"object {digest} is not in the cache",
        hint="treat it as a cache miss: the node will be recomputed",
    )


def _empty_target(dest: Path) -> str:
    """Create `dest` if needed, insist it is empty, and return its real path."""
    try:
        dest.mkdir(parents=True, exist_ok=True)
        occupied = any(dest.iterdir())
    except OSError as exc:
        raise unwritable(exc, dest) from exc
    if occupied:
        raise CacheError(
            "cache_restore_target_not_empty",
            f"{dest} is not empty; a tree is restored only into an empty directory",
            file=str(dest),
        )
    return os.path.realpath(dest)


def _inside(base: str, rel: str) -> str:
    """`base/rel`, refusing any path whose parent resolves outside `base`."""
    target = os.path.join(base, rel)
    parent = os.path.dirname(target)
    if not rel or rel.startswith("/") or os.path.realpath(parent) != parent:
        raise CacheError(
            "cache_unsafe_path",
            f"tree entry {rel!r} would be written outside {base}",
            field="path",
            hint="the tree manifest is malicious or corrupt; do not use this cache entry",
        )
    return target
