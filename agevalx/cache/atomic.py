"""Crash-safe writes: stage under `tmp/`, fsync, rename into place, fsync the directory.

A reader therefore sees either no file or a complete one, and after a crash the only
leftovers are staging files that gc removes once they are stale.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agevalx.cache.errors import CacheError
from agevalx.cache.streams import write_all


def unwritable(exc: OSError, path: Path) -> CacheError:
    """The coded error for a cache path that cannot be written."""
    return CacheError(
        "cache_unwritable",
        f"cannot write {path}: {exc.strerror or exc}",
        file=str(path),
        hint="check permissions and free space, or choose another cache with --cache-dir",
    )


def fsync_dir(path: Path) -> None:
    """Make a rename or creation inside `path` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def ensure_dir(path: Path) -> None:
    """Create `path` and missing parents, fsyncing each parent that gained an entry."""
    if path.is_dir():
        return
    ensure_dir(path.parent)
    try:
        os.mkdir(path)
    except FileExistsError as exc:
        if path.is_dir():
            return
        raise unwritable(exc, path) from exc
    except OSError as exc:
        raise unwritable(exc, path) from exc
    fsync_dir(path.parent)


class StagedFile:
    """A file being written under `tmp/`; `commit` moves it to its final name."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path
        self.done = False

    def write(self, data: bytes | memoryview) -> None:
        """Append all of `data`."""
        try:
            write_all(self.fd, data)
        except OSError as exc:
            raise unwritable(exc, self.path) from exc

    def commit(self, dest: Path, mode: int) -> None:
        """fsync, then atomically replace `dest` with this file and fsync its directory."""
        try:
            os.fchmod(self.fd, mode)
            os.fsync(self.fd)
            os.close(self.fd)
            self.done = True
            ensure_dir(dest.parent)
            os.replace(self.path, dest)
            fsync_dir(dest.parent)
        except OSError as exc:
            raise unwritable(exc, dest) from exc


@contextmanager
def staged(tmp_dir: Path) -> Iterator[StagedFile]:
    """Yield a fresh staging file in `tmp_dir`; it is removed unless committed."""
    try:
        fd, name = tempfile.mkstemp(dir=tmp_dir, prefix="stage-")
    except OSError as exc:
        raise unwritable(exc, tmp_dir) from exc
    staging = StagedFile(fd, Path(name))
    try:
        yield staging
    finally:
        if not staging.done:
            os.close(fd)
        Path(name).unlink(missing_ok=True)


def write_atomic(tmp_dir: Path, dest: Path, data: bytes, mode: int = 0o644) -> None:
    """Write `data` to `dest` so that readers never see a partial file."""
    with staged(tmp_dir) as staging:
        staging.write(data)
        staging.commit(dest, mode)
