"""A shared cache at an fsspec URL (`s3://`, `gs://`, `file://`, ...): the remote backend.

It implements the same `CacheBackend` as the local disk, over the layout of
`cache_layout.md` ("Remote caches"). Everything read from it is untrusted: names are
validated before a path is built, every object is re-hashed, trees are validated, and with
a signing key only entries carrying a valid HMAC are believed. Writes are create-only:
S3 gets a conditional `PUT` (`If-None-Match: *`), a `file://` remote a hard link of a
complete staged file (which fails if the name exists), other filesystems fsspec's
check-then-write. An object already there under its digest counts as written.

A failing remote is an outage, never a crash: the first error of the session trips it
(a warning), later calls fail fast with `remote_unavailable`, and callers carry on locally.
fsspec and its backends are imported only when a remote is opened.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from pydantic import ValidationError

from agevalx.cache import layout
from agevalx.cache.atomic import fsync_dir
from agevalx.cache.backend import ActionId, ObjectId
from agevalx.cache.errors import CacheError
from agevalx.cache.manifest import ActionManifest, RefFile, TreeManifest
from agevalx.cache.remote.entry import SIGNING_KEY_ENV, RemoteEntry, signature_ok
from agevalx.cache.remote.stats import RemoteStats
from agevalx.cache.streams import write_all
from agevalx.hashing import ALGORITHM, digest_bytes

REMOTE_VERSION = "ageval-remote 1"
"""The content of a remote's VERSION file (plus a newline)."""
VERSION_FILE = "VERSION"
GENERATION_FILE = "GENERATION"
"""A random token kept while nothing is deleted from the remote: made by its first writer,
replaced before anything is deleted (`delete`, which gc uses). A push that found its whole
closure on the remote remembers that locally under this token (`cache/transfer.py`): the
same push under the same token needs no listing. Files deleted by hand, not through
ageval, should take GENERATION with them."""
STAGING = "tmp"
"""Staging directory of `file://` remotes (hard-linked into place, so never read)."""
WORKERS = 16
"""Concurrent requests per remote: latency-bound, not CPU-bound."""
S3_CLIENT_CONFIG: dict[str, Any] = {
    "connect_timeout": 10,
    "read_timeout": 60,
    "retries": {"max_attempts": 3, "mode": "standard"},
}
"""botocore settings for s3:// unless the remote's options say otherwise: fail in seconds."""
LIST_FROM = 64
"""Asked about this many objects or entries of one area or more, the remote lists the area's
keys in the range asked about (S3: 1,000 keys per request) instead of one request per key. A
listing stops after (keys asked about) / `WORKERS` pages, what as many rounds of concurrent
HEADs would cost; what it did not reach is checked one key at a time."""

_T = TypeVar("_T")


class RemoteError(CacheError):
    """The remote could not do what was asked. Callers warn and carry on without it.

    Codes: `remote_unavailable`, `remote_access_denied`, `remote_write_failed`,
    `remote_entry_conflict`, `remote_read_only`, `remote_version_mismatch`,
    `remote_invalid_url`, `remote_backend_missing`.
    """


@dataclass(frozen=True)
class Listed:
    """A key found by listing an area: its size and, on S3, its ETag (the MD5 of an object
    uploaded in one PUT)."""

    size: int
    etag: str | None


@dataclass(frozen=True)
class RemoteFile:
    """One file of a remote area, as listed (for gc)."""

    path: str
    name: str
    """`<2 hex><30 hex>` under objects/ and trees/, `kind/key` under actions/, else the path."""
    size: int


class RemoteStore:
    """The action cache and content store at one fsspec URL. Safe to share between threads."""

    def __init__(
        self,
        url: str,
        *,
        name: str | None = None,
        read_only: bool = False,
        options: Mapping[str, Any] | None = None,
        signing_key: bytes | None = None,
    ) -> None:
        self.url = url
        self.name = name
        self.read_only = read_only
        """Refuse every write (`remote_read_only`); lookups still work."""
        self.signing_key = signing_key
        """With a key, entries are signed on upload and only validly signed ones are read."""
        self.options = dict(options or {})
        """The fsspec storage options it was opened with (never credentials)."""
        self.stats = RemoteStats()
        self.requests = 0
        """Filesystem calls made so far (reads, stats, writes, listings): counted work."""
        self.fs, self.base = _open_filesystem(url, dict(self.options))
        self._local = _is_local(self.fs)
        self._s3 = type(self.fs).__name__ == "S3FileSystem"
        self._pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="remote")
        self._lock = threading.Lock()
        self._version_lock = threading.Lock()
        self._down: str | None = None
        self._version_read = False
        self._version_present = False

    @property
    def location(self) -> str:
        """The remote's name, or its URL without credentials."""
        return self.name or _redacted(self.url)

    @property
    def identity(self) -> str:
        """Its URL without credentials, and whether (with which key) it signs: what a push
        remembered is remembered for this."""
        key = self.signing_key
        signer = hashlib.sha256(key).hexdigest()[:16] if key else "unsigned"
        return f"{_redacted(self.url)}#{signer}"

    def in_use(self) -> AbstractContextManager[None]:
        """Remote gc takes no lock (see cache_layout.md): nothing to hold."""
        return nullcontext()

    @property
    def available(self) -> bool:
        """False once an error has tripped the remote off for this session."""
        return self._down is None

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def __enter__(self) -> RemoteStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # Content store

    def missing_objects(self, objects: Iterable[ObjectId]) -> set[ObjectId]:
        """The `objects` the remote lacks: from a listing of the range asked about when there
        are many (`LIST_FROM`), else, and for what a listing left out, one HEAD each."""
        wanted = sorted(set(objects))
        self._check_version(create=False)
        missing: set[ObjectId] = set()
        unsure: list[ObjectId] = []
        areas = ((layout.OBJECTS, "blob"), (layout.TREES, "tree"))
        named = [{_split_name(o.digest): o for o in wanted if o.type == kind} for _, kind in areas]
        # Both areas are listed at once.
        listings = self._pool.map(self._listed, [a for a, _ in areas], [sorted(n) for n in named])
        for names, (listed, until) in zip(named, listings, strict=True):
            for name, obj in names.items():
                if name in listed:
                    continue
                if name <= until:
                    missing.add(obj)
                else:
                    unsure.append(obj)
        present = self._pool.map(lambda obj: self._exists(self._object_path(obj)), unsure)
        return missing | {obj for obj, here in zip(unsure, present, strict=True) if not here}

    def read_object(self, obj: ObjectId) -> bytes:
        """The object's bytes, re-hashed; a tree is validated too."""
        path = self._object_path(obj)
        self._check_version(create=False)
        try:
            data = self._io(f"read {obj}", lambda: self.fs.cat_file(path))
        except FileNotFoundError as exc:
            raise CacheError(
                "cache_missing_object",
                f"{obj} is not on remote {self.location}",
                hint="treat it as a cache miss: the node will be recomputed",
            ) from exc
        self.stats.add(objects_downloaded=1, bytes_downloaded=len(data))
        if digest_bytes(data) != obj.digest:
            self.stats.add(read_errors=1)
            raise CacheError(
                "cache_corrupt_object",
                f"{obj} on remote {self.location} does not match its digest",
                file=path,
                hint="it is treated as a miss; delete it on the remote so a push can rewrite it",
            )
        if obj.type == "tree":
            TreeManifest.from_bytes(data, source=path)
        return bytes(data)

    def write_object(self, obj: ObjectId, data: bytes) -> bool:
        """Upload verified bytes unless the object is there; True if this call created it."""
        self.require_writable()
        if digest_bytes(data) != obj.digest:
            raise CacheError("cache_corrupt_object", f"{obj}: refusing to upload corrupt bytes")
        self._check_version(create=True)
        created = self._put_new(self._object_path(obj), data, f"upload {obj}")
        if created:
            self.stats.add(objects_uploaded=1, bytes_uploaded=len(data))
        return created

    # Action cache

    def read_entry(self, action: ActionId) -> ActionManifest | None:
        """The entry under `action` if well-formed and, with a signing key, validly signed."""
        path = self._entry_path(action)
        self._check_version(create=False)
        try:
            data = self._io(f"read {action}", lambda: self.fs.cat_file(path))
        except FileNotFoundError:
            return None
        self.stats.add(bytes_downloaded=len(data))
        try:
            return self._trusted(action, _wrapped(action, data, path), path)
        except _Untrusted as problem:
            self.stats.add(read_errors=1)
            self.stats.warn(problem.code, f"remote {self.location}: {problem}; ignored")
            return None

    def _trusted(self, action: ActionId, wrapped: RemoteEntry, path: str) -> ActionManifest:
        """The manifest inside `wrapped`, if it is filed rightly and signed as required."""
        try:
            manifest = wrapped.manifest(path)
        except CacheError as exc:
            raise _Untrusted("remote_entry_malformed", f"{action}: {exc.message[:300]}") from exc
        if (manifest.kind, manifest.key) != (action.kind, action.key):
            raise _Untrusted("remote_entry_malformed", f"{action}: filed under another name")
        if self.signing_key is None:
            return manifest
        if wrapped.signature is None:
            raise _Untrusted(
                "remote_entry_unsigned", f"{action} is unsigned; {SIGNING_KEY_ENV} is set"
            )
        if not signature_ok(self.signing_key, wrapped):
            raise _Untrusted(
                "remote_entry_bad_signature", f"{action}: the signature does not verify"
            )
        return manifest

    def write_entry(self, manifest: ActionManifest) -> None:
        """Upload an entry (signed when a key is set); its objects must be uploaded first.

        An entry already filed under the key counts as written if it is usable; an unusable
        one cannot be replaced (writes are create-only): `remote_entry_conflict`.
        """
        self.require_writable()
        self._check_version(create=True)
        action = ActionId.of(manifest)
        data = RemoteEntry.wrap(manifest, self.signing_key).canonical_bytes()
        if self._put_new(self._entry_path(action), data, f"upload {action}"):
            self.stats.add(uploads=1, bytes_uploaded=len(data))
            return
        if self.read_entry(action) is None:
            raise RemoteError(
                "remote_entry_conflict",
                f"remote {self.location} already holds an unusable entry for {action}",
                hint="writes are create-only; `ageval cache gc --remote` deletes unusable entries",
            )

    def missing_entries(self, manifests: Mapping[ActionId, ActionManifest]) -> set[ActionId]:
        """The entries among `manifests` that must be written: those the remote lacks or holds
        in a form this store cannot use. A listed entry whose ETag is the MD5 of the bytes a
        write would upload holds exactly those bytes, so it is usable without being read;
        any other is read and checked (`read_entry`)."""
        self._check_version(create=False)
        names = {_entry_name(action): action for action in manifests}
        listed, until = self._listed(layout.ACTIONS, sorted(names))
        missing: set[ActionId] = set()
        unsure: list[ActionId] = []
        for name, action in names.items():
            found = listed.get(name)
            if found is None and name <= until:
                missing.add(action)
            elif found is None or found.etag != self._etag_of(manifests[action]):
                unsure.append(action)
        held = self._pool.map(self.read_entry, unsure)
        return missing | {
            action for action, entry in zip(unsure, held, strict=True) if entry is None
        }

    def _etag_of(self, manifest: ActionManifest) -> str:
        data = RemoteEntry.wrap(manifest, self.signing_key).canonical_bytes()
        return hashlib.md5(data, usedforsecurity=False).hexdigest()

    def entries(self) -> Iterator[ActionId]:
        """Every validly named entry file on the remote, sorted."""
        for item in self.list_area(layout.ACTIONS):
            kind, _, key = item.name.partition("/")
            if layout.KIND_RE.fullmatch(kind) and layout.DIGEST_RE.fullmatch(key):
                yield ActionId(kind, key)

    # Refs (gc roots on the remote: replaced on write, never signed)

    def list_refs(self) -> dict[str, tuple[str, ...]]:
        """Every ref on the remote; a malformed one raises `cache_invalid_ref`."""
        refs: dict[str, tuple[str, ...]] = {}
        for item in self.list_area(layout.REFS):
            if not layout.REF_NAME_RE.fullmatch(item.name):
                continue
            data = self._io(f"read ref {item.name}", partial(self.fs.cat_file, item.path))
            try:
                refs[item.name] = RefFile.model_validate_json(data).targets
            except ValidationError as exc:
                raise CacheError(
                    "cache_invalid_ref",
                    f"remote ref {item.name} is malformed: {exc}",
                    file=item.path,
                    hint="fix or delete the ref; gc refuses to run without knowing its roots",
                ) from exc
        return refs

    def set_ref(self, name: str, targets: Iterable[str]) -> None:
        """Write (or replace) the ref `name`."""
        self.require_writable()
        self._check_version(create=True)
        data = RefFile(targets=tuple(sorted(set(targets)))).canonical_bytes()
        path = f"{self.base}/{layout.REFS}/{layout.check_ref_name(name)}"
        self._io(f"write ref {name}", lambda: self._replace(path, data))

    # Listing and deletion (remote gc)

    def list_area(self, area: str) -> list[RemoteFile]:
        """Every file under `objects/<algorithm>`, `trees/<algorithm>`, `actions` or `refs`."""
        root = self._area_root(area)
        try:
            found = self._io(f"list {area}", lambda: self.fs.find(root, detail=True))
        except FileNotFoundError:
            return []
        files: list[RemoteFile] = []
        for path, info in sorted(found.items()):
            relative = _relative(path, root)
            if relative is None:
                continue
            if area in _DIGEST_AREAS:
                name = relative.replace("/", "", 1)
            elif area == layout.ACTIONS:
                kind, _, rest = relative.partition("/")
                name = f"{kind}/{rest.replace('/', '', 1)}"
            else:
                name = relative
            files.append(RemoteFile(path=path, name=name, size=int(info.get("size") or 0)))
        return files

    def generation(self) -> str | None:
        """The remote's GENERATION token (made on first use when writable); None when it
        has none, or one that is not a token."""
        path = f"{self.base}/{GENERATION_FILE}"
        found = self._read_small(path, "read GENERATION")
        if found is None and not self.read_only:
            token = f"{uuid.uuid4().hex}\n".encode()
            if self._put_new(path, token, "write GENERATION"):
                found = token
            else:  # another writer made it first
                found = self._read_small(path, "read GENERATION")
        text = (found or b"").decode("ascii", "replace").strip()
        return text if layout.DIGEST_RE.fullmatch(text) else None

    def _new_generation(self) -> None:
        """Replace GENERATION before a deletion: what pushes remembered under the old token
        is asked of the remote again."""
        path = f"{self.base}/{GENERATION_FILE}"
        token = f"{uuid.uuid4().hex}\n".encode()
        self._io("write GENERATION", lambda: self._replace(path, token))

    def _read_small(self, path: str, what: str) -> bytes | None:
        try:
            data: bytes = self._io(what, lambda: self.fs.cat_file(path))
        except FileNotFoundError:
            return None
        return data[:256]

    def delete(self, paths: list[str]) -> None:
        """Delete files found by `list_area` (paths never built from remote content), after
        replacing the remote's GENERATION."""
        self.require_writable()
        if paths:
            self._new_generation()
        for start in range(0, len(paths), 1000):
            batch = paths[start : start + 1000]
            self._io("delete", partial(self._remove, batch))

    # Internals

    def _object_path(self, obj: ObjectId) -> str:
        area = layout.OBJECTS if obj.type == "blob" else layout.TREES
        return f"{self.base}/{area}/{ALGORITHM}/{_split_name(obj.digest)}"

    def _entry_path(self, action: ActionId) -> str:
        return f"{self.base}/{layout.ACTIONS}/{_entry_name(action)}"

    def _area_root(self, area: str) -> str:
        if area in _DIGEST_AREAS:
            return f"{self.base}/{area}/{ALGORITHM}"
        if area in (layout.ACTIONS, layout.REFS):
            return f"{self.base}/{area}"
        raise ValueError(f"unknown remote area {area!r}")

    def _io(self, what: str, operation: Callable[[], _T]) -> _T:
        """Run one filesystem call; any failure but absence or existence trips the remote."""
        if self._down is not None:
            raise self._unavailable()
        with self._lock:
            self.requests += 1
        try:
            return operation()
        except (FileNotFoundError, FileExistsError):
            raise
        except PermissionError as exc:
            raise RemoteError(
                "remote_access_denied",
                f"remote {self.location}: {what}: access denied ({exc})",
                hint="check the credentials in the environment (for S3: AWS_* variables)",
            ) from exc
        except Exception as exc:  # any failure of a remote is an outage, not a crash
            self._trip(f"{what}: {type(exc).__name__}: {exc}")
            raise self._unavailable() from exc

    def _trip(self, reason: str) -> None:
        with self._lock:
            if self._down is not None:
                return
            self._down = reason
        self.stats.warn(
            "remote_unavailable",
            f"remote {self.location} failed ({reason[:300]}); carrying on without it",
        )

    def _unavailable(self) -> RemoteError:
        return RemoteError(
            "remote_unavailable",
            f"remote {self.location} is unavailable: {(self._down or '')[:300]}",
            hint="check the URL, the network and the credentials; the local cache still works",
        )

    def require_writable(self) -> None:
        """Raise `remote_read_only` if this remote was configured read-only."""
        if self.read_only:
            raise RemoteError(
                "remote_read_only",
                f"remote {self.location} is read-only",
                hint="it was added with --read-only; add it again without the flag to write",
            )

    def _check_version(self, *, create: bool) -> None:
        """Refuse a remote of another layout; a writer creates VERSION on first write."""
        if self._version_present or (self._version_read and not create):
            return
        with self._version_lock:
            if self._version_present or (self._version_read and not create):
                return  # another thread checked it while this one waited
            path = f"{self.base}/{VERSION_FILE}"
            try:
                found: bytes | None = self._io("read VERSION", lambda: self.fs.cat_file(path))
            except FileNotFoundError:
                found = None
            if found is None and create:
                wanted = f"{REMOTE_VERSION}\n".encode()
                if self._put_new(path, wanted, "write VERSION"):
                    found = wanted
                else:
                    found = self._io("read VERSION", lambda: self.fs.cat_file(path))
            self._version_read = True
            if found is None:
                return
            if found.decode("utf-8", "replace").strip() != REMOTE_VERSION:
                self._trip(f"its VERSION is {found[:40]!r}, this ageval reads {REMOTE_VERSION!r}")
                raise RemoteError(
                    "remote_version_mismatch",
                    f"remote {self.location} has another layout: {found[:40]!r}",
                    hint="use another remote URL, or upgrade ageval",
                )
            self._version_present = True

    def _listed(self, area: str, names: list[str]) -> tuple[dict[str, Listed], str]:
        """The keys of `area` from the first to the last of the sorted `names` (paths relative
        to the area's root), and the name up to which that listing is complete: the last name
        when it covered the range, less when it stopped at its page budget, "" when the area
        was not listed (too few names, or a filesystem other than S3 and local disk)."""
        if len(names) < LIST_FROM or not (self._s3 or self._local):
            return {}, ""
        root = self._area_root(area)
        if self._local:
            return self._listed_locally(root), names[-1]
        bucket, prefix, _ = self.fs.split_path(root + "/")
        listed: dict[str, Listed] = {}
        request: dict[str, Any] = {
            "Bucket": bucket,
            "Prefix": prefix,
            "StartAfter": prefix + names[0][:-1],
        }
        reached = ""
        for _ in range(max(1, len(names) // WORKERS)):
            page = self._io(f"list {area}", partial(self.fs.call_s3, "list_objects_v2", **request))
            for item in page.get("Contents", []):
                reached = str(item["Key"])[len(prefix) :]
                listed[reached] = Listed(int(item.get("Size") or 0), _etag(item.get("ETag")))
            if not page.get("IsTruncated") or reached >= names[-1]:
                return listed, names[-1]
            request["ContinuationToken"] = page["NextContinuationToken"]
        return listed, reached

    def _listed_locally(self, root: str) -> dict[str, Listed]:
        listed: dict[str, Listed] = {}
        with self._lock:
            self.requests += 1
        for directory, _, files in os.walk(root):
            relative = os.path.relpath(directory, root)
            for file in files:
                name = file if relative == "." else f"{relative}/{file}".replace(os.sep, "/")
                listed[name] = Listed(os.path.getsize(os.path.join(directory, file)), None)
        return listed

    def _exists(self, path: str) -> bool:
        return bool(self._io("stat", lambda: self._stat(path)))

    def _stat(self, path: str) -> bool:
        if not self._s3:
            return bool(self.fs.exists(path))
        # One HEAD: s3fs's exists() follows a 404 with a LIST (is it a directory?).
        bucket, key, _ = self.fs.split_path(path)
        try:
            self.fs.call_s3("head_object", Bucket=bucket, Key=key)
        except FileNotFoundError:
            return False
        return True

    def _put_new(self, path: str, data: bytes, what: str) -> bool:
        """Create `path` with `data` unless it exists; True if this call created it."""
        try:
            return self._io(what, lambda: self._create(path, data))
        except FileNotFoundError as exc:
            raise RemoteError(
                "remote_write_failed",
                f"remote {self.location}: {what}: {exc}",
                hint="does the bucket or directory of the remote exist?",
            ) from exc

    def _create(self, path: str, data: bytes) -> bool:
        if self._local:
            return self._link_into_place(path, data)
        try:
            self.fs.pipe_file(path, data, mode="create")
        except FileExistsError:
            return False
        return True

    def _link_into_place(self, path: str, data: bytes) -> bool:
        """`file://`: write a staged file, then hard-link it to `path` (fails if it exists)."""
        staging_dir = f"{self.base}/{STAGING}"
        os.makedirs(staging_dir, exist_ok=True)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, staging = tempfile.mkstemp(dir=staging_dir, prefix="put-")
        try:
            try:
                write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(staging, path)
            except FileExistsError:
                return False
            fsync_dir(Path(path).parent)
            return True
        finally:
            os.unlink(staging)

    def _replace(self, path: str, data: bytes) -> None:
        if not self._local:
            self.fs.pipe_file(path, data)
            return
        staging_dir = f"{self.base}/{STAGING}"
        os.makedirs(staging_dir, exist_ok=True)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, staging = tempfile.mkstemp(dir=staging_dir, prefix="ref-")
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(staging, path)

    def _remove(self, paths: list[str]) -> None:
        if self._local:
            for path in paths:
                Path(path).unlink(missing_ok=True)
        else:
            self.fs.rm(paths)


_DIGEST_AREAS = (layout.OBJECTS, layout.TREES)


class _Untrusted(Exception):
    """A remote entry that is read but not believed; `code` names the reason."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _wrapped(action: ActionId, data: bytes, path: str) -> RemoteEntry:
    try:
        return RemoteEntry.from_bytes(data, source=path)
    except CacheError as exc:
        raise _Untrusted("remote_entry_malformed", f"{action}: {exc.message[:300]}") from exc


def _split_name(digest: str, field: str = "digest") -> str:
    """The path of a digest under its area: `<2 hex>/<30 hex>`."""
    digest = layout.check_digest(digest, field)
    return f"{digest[:2]}/{digest[2:]}"


def _entry_name(action: ActionId) -> str:
    """The path of an entry under `actions/`: `<kind>/<2 hex>/<30 hex>`."""
    return f"{layout.check_kind(action.kind)}/{_split_name(action.key, 'key')}"


def _etag(value: object) -> str | None:
    return value.strip('"') if isinstance(value, str) else None


def _open_filesystem(url: str, options: dict[str, Any]) -> tuple[Any, str]:
    """The fsspec filesystem and root path of `url`, importing fsspec only now."""
    protocol = url.partition("://")[0]
    if protocol == "s3":
        options = {"config_kwargs": S3_CLIENT_CONFIG, "use_listings_cache": False, **options}
    try:
        import fsspec.core

        fs, root = fsspec.core.url_to_fs(url, skip_instance_cache=True, **options)
    except ImportError as exc:
        raise RemoteError(
            "remote_backend_missing",
            f"{protocol}:// needs a package that is not installed ({exc})",
            hint="for s3:// install agevalx[s3] (s3fs); other URLs need their fsspec backend",
        ) from exc
    except (ValueError, TypeError) as exc:
        raise RemoteError(
            "remote_invalid_url",
            f"cannot open remote {_redacted(url)}: {exc}",
            field="url",
            hint="use a URL such as s3://bucket/prefix or file:///absolute/path",
        ) from exc
    if protocol == "s3":
        from agevalx.cache.remote.s3session import share_loader

        share_loader(fs)
    return fs, str(root).rstrip("/")


def _is_local(fs: Any) -> bool:
    from fsspec.implementations.local import LocalFileSystem

    return isinstance(fs, LocalFileSystem)


def _relative(path: str, root: str) -> str | None:
    prefix = root.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else None


def _redacted(url: str) -> str:
    """`url` without a user name or password."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
