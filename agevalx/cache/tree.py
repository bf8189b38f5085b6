"""Hash a directory into a `TreeManifest` without storing anything.

Files are streamed through xxh3-128 in a thread pool (reads and xxhash both release the
GIL). Symlinks are recorded with their target and never followed; other special files
(sockets, fifos, devices) are skipped. A `StatCache` lets unchanged files skip reading.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agevalx.cache.errors import CacheError
from agevalx.cache.globs import PathFilter
from agevalx.cache.manifest import DIR_MODE, SYMLINK_MODE, TreeEntry, TreeManifest
from agevalx.cache.statcache import StatCache
from agevalx.cache.streams import pump

HASH_WORKERS = min(8, os.cpu_count() or 1)
IGNORED_NAMES = ("__pycache__", ".DS_Store")
"""File and directory names that are never part of a task's content."""
IGNORED_GLOBS = tuple(pattern for name in IGNORED_NAMES for pattern in (name, f"**/{name}"))
"""Hashing threads: one per CPU (measured best on 2 cores), at most 8."""


EntryType = Literal["file", "symlink", "dir"]


@dataclass(frozen=True)
class Found:
    """A walked path before hashing."""

    path: str
    type: str
    st: os.stat_result
    target: str | None = None


@dataclass(frozen=True)
class Hashed:
    """A file's digest, the bytes read, and whether the stat cache may remember it."""

    digest: str
    size: int
    recordable: bool


def hash_tree(
    root: Path,
    *,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    stat_cache: StatCache | None = None,
    specials: list[str] | None = None,
) -> TreeManifest:
    """Describe the tree under `root` (entries and digest) without storing anything.

    `include`/`exclude` are globs over relative POSIX paths (see `agevalx.cache.globs`);
    exclude wins. The stat cache only saves reading unchanged files. Sockets, pipes and
    devices are never part of a tree; their paths are appended to `specials` when given.
    """
    found = hash_trees(
        [root],
        include=include,
        exclude=exclude,
        stat_cache=stat_cache,
        specials=None if specials is None else [specials],
    )
    return found[0]


def hash_trees(
    roots: Sequence[Path],
    *,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    stat_cache: StatCache | None = None,
    specials: Sequence[list[str]] | None = None,
) -> list[TreeManifest]:
    """`hash_tree` of each root (with `specials[i]` for `roots[i]`), the files of them all
    asked of the stat cache together and hashed in one pool."""
    trees = _walk_and_digest(roots, PathFilter(include, exclude), stat_cache, specials)
    # Built without re-validation: the walk itself makes what the models check (scandir
    # names, sorted paths, every parent listed, normalised modes); only UTF-8 is checked.
    return [
        TreeManifest.model_construct(entries=tuple(_entry(item, hashed) for item in found))
        for found, hashed in trees
    ]


def tree_values(
    roots: Sequence[Path],
    *,
    exclude: Sequence[str] | None = None,
    stat_cache: StatCache | None = None,
    specials: Sequence[list[str]] | None = None,
) -> list[dict[str, str]]:
    """What a node key reads of each root's tree, `{path: value}` in path order: a file's
    digest (`+x` after an executable's), `dir`, or `symlink:<target>`. The same walk and
    digests as `hash_trees`, without building manifests: a plan walks a thousand task
    directories, and asks the stat cache for all their files in a few queries."""
    trees = _walk_and_digest(roots, PathFilter(None, exclude), stat_cache, specials)
    return [{item.path: _value(item, hashed) for item in found} for found, hashed in trees]


def _walk_and_digest(
    roots: Sequence[Path],
    path_filter: PathFilter,
    stat_cache: StatCache | None,
    specials: Sequence[list[str]] | None,
) -> list[tuple[list[Found], dict[str, Hashed]]]:
    """Each root's walked entries and its files' digests (the stat cache asked once for all)."""
    for root in roots:
        if not root.is_dir():
            raise CacheError("cache_not_a_directory", f"{root} is not a directory", file=str(root))
    started_ns = time.time_ns()
    walked = [
        walk(root, path_filter, None if specials is None else specials[index])
        for index, root in enumerate(roots)
    ]
    files = [
        (os.path.join(root, item.path), item)
        for root, found in zip(roots, walked, strict=True)
        for item in found
        if item.type == "file"
    ]
    digests = iter(digest_files(files, stat_cache))
    trees = [
        (found, {item.path: next(digests) for item in found if item.type == "file"})
        for found in walked
    ]
    if stat_cache is not None:
        recordable = [
            (item.st, hashed[item.path].digest)
            for found, hashed in trees
            for item in found
            if _recordable(item, hashed)
        ]
        stat_cache.record(recordable, started_ns)
    return trees


def walk(root: Path, path_filter: PathFilter, specials: list[str] | None = None) -> list[Found]:
    """Every kept directory, file and symlink under `root`, sorted by path; other kept
    paths (sockets, pipes, devices) go to `specials` when it is given."""
    try:
        found = _walk_dir(os.fspath(root), "", path_filter, specials)
    except OSError as exc:
        raise _source_error(str(exc.filename or root), exc) from exc
    found.sort(key=lambda item: item.path)
    return found


def _walk_dir(
    root: str, rel: str, path_filter: PathFilter, specials: list[str] | None
) -> list[Found]:
    found: list[Found] = []
    with os.scandir(os.path.join(root, rel) if rel else root) as entries:
        for dir_entry in entries:
            path = f"{rel}/{dir_entry.name}" if rel else dir_entry.name
            if path_filter.excludes(path):
                continue
            st = dir_entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                below = _walk_dir(root, path, path_filter, specials)
                if below or path_filter.includes(path):
                    found.append(Found(path, "dir", st))
                    found.extend(below)
            elif not path_filter.includes(path):
                continue
            elif stat.S_ISREG(st.st_mode):
                found.append(Found(path, "file", st))
            elif stat.S_ISLNK(st.st_mode):
                found.append(Found(path, "symlink", st, os.readlink(dir_entry.path)))
            elif specials is not None:
                specials.append(path)
    return found


def digest_files(files: list[tuple[str, Found]], stat_cache: StatCache | None) -> list[Hashed]:
    """Digest each file (its full path and walked state), from the stat cache where it can
    be trusted, else by reading."""
    known: list[str | None] = [None] * len(files)
    if stat_cache is not None:
        known = stat_cache.lookup_many([item.st for _, item in files])
    misses = [file for file, digest in zip(files, known, strict=True) if digest is None]
    read = iter(_hash_in_stripes(misses))
    return [
        next(read) if digest is None else Hashed(digest, item.st.st_size, recordable=False)
        for (_, item), digest in zip(files, known, strict=True)
    ]


def _hash_in_stripes(files: list[tuple[str, Found]]) -> list[Hashed]:
    """Hash `files` in HASH_WORKERS threads, each taking every n-th file.

    One task per thread rather than per file: per-task overhead (and GIL hand-offs)
    cost more than hashing a small file.
    """
    workers = min(HASH_WORKERS, len(files))
    if workers <= 1:
        return _hash_all(files)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        stripes = list(pool.map(lambda n: _hash_all(files[n::workers]), range(workers)))
    return [stripes[index % workers][index // workers] for index in range(len(files))]


def _hash_all(files: list[tuple[str, Found]]) -> list[Hashed]:
    return [hash_file(path, item.st) for path, item in files]


def hash_file(path: str, walked: os.stat_result | None = None) -> Hashed:
    """Stream one regular file (never through a symlink) through xxh3-128."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise _source_error(path, exc) from exc
    try:
        before = os.fstat(fd)
        digest, size = pump(fd)
        after = os.fstat(fd)
    except OSError as exc:
        raise _source_error(path, exc) from exc
    finally:
        os.close(fd)
    recordable = _same_state(before, after) and (walked is None or _same_state(walked, after))
    return Hashed(digest, size, recordable)


def _same_state(first: os.stat_result, second: os.stat_result) -> bool:
    return (first.st_dev, first.st_ino, first.st_size, first.st_mtime_ns, first.st_ctime_ns) == (
        second.st_dev,
        second.st_ino,
        second.st_size,
        second.st_mtime_ns,
        second.st_ctime_ns,
    )


def _recordable(item: Found, hashed: dict[str, Hashed]) -> bool:
    return item.type == "file" and hashed[item.path].recordable


def _source_error(path: str, exc: OSError) -> CacheError:
    return CacheError(
        "cache_source_unreadable",
        f"cannot read {path}: {exc.strerror or exc}",
        file=path,
        hint="the tree changed or is unreadable; make sure nothing writes to it",
    )


def _entry(item: Found, hashed: dict[str, Hashed]) -> TreeEntry:
    _check_utf8(item.path, item.target)
    if item.type == "dir":
        return _made(item.path, "dir", None, 0, DIR_MODE, None)
    if item.type == "symlink":
        size = len((item.target or "").encode("utf-8"))
        return _made(item.path, "symlink", None, size, SYMLINK_MODE, item.target)
    file = hashed[item.path]
    mode = 0o755 if item.st.st_mode & 0o111 else 0o644
    return _made(item.path, "file", file.digest, file.size, mode, None)


def _value(item: Found, hashed: dict[str, Hashed]) -> str:
    """An entry as `tree_values` gives it (what `_entry` makes of it, as a key reads it)."""
    _check_utf8(item.path, item.target)
    if item.type == "dir":
        return "dir"
    if item.type == "symlink":
        return f"symlink:{item.target}"
    digest = hashed[item.path].digest
    return f"{digest}+x" if item.st.st_mode & 0o111 else digest


def _made(
    path: str, type: EntryType, digest: str | None, size: int, mode: int, target: str | None
) -> TreeEntry:
    return TreeEntry.model_construct(
        path=path, type=type, digest=digest, size=size, mode=mode, target=target
    )


def _check_utf8(*texts: str | None) -> None:
    for text in texts:
        try:
            (text or "").encode("utf-8")
        except UnicodeEncodeError as exc:
            raise CacheError(
                "cache_unencodable_path",
                f"{text!r} is not valid UTF-8; tree manifests hold UTF-8 paths only",
            ) from exc
