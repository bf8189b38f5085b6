"""The gc lock: writers share it, gc holds it alone.

`fcntl.flock` on `gc.lock` in the cache root. A writer holds the shared lock from the
first blob it stores until the action entry naming them is written, so gc (exclusive)
never sees a blob that is about to be referenced as garbage. Nested use in one thread
is re-entrant; flock itself is per open file, so threads and processes exclude each
other alike.
"""

from __future__ import annotations

import fcntl
import os
import stat
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

from agevalx.cache.errors import CacheError


def _unusable(path: Path, why: str) -> CacheError:
    return CacheError(
        "cache_lock_unusable",
        f"the cache's gc lock is unusable: {why}",
        file=str(path),
        hint=f"move {path} out of the way (ageval creates it again as an empty file), or "
        "choose another cache with --cache-dir",
    )


class CacheLock:
    """Shared/exclusive lock on one lock file, re-entrant per thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._held = threading.local()

    def check(self) -> None:
        """Raise `cache_lock_unusable` unless the lock file is absent or a regular file: a
        directory there would fail every writer and gc, a link would lock (or create) a file
        outside the cache."""
        try:
            mode = os.lstat(self.path).st_mode
        except FileNotFoundError:
            return
        except OSError as exc:
            raise _unusable(self.path, exc.strerror or str(exc)) from None
        if stat.S_ISDIR(mode):
            raise _unusable(self.path, "it is a directory")
        if not stat.S_ISREG(mode):
            raise _unusable(self.path, "it is not a regular file")

    def shared(self) -> AbstractContextManager[None]:
        """Hold the lock shared (many writers at once); nothing to do in a thread that holds
        it already (planning asks once per node inside one hold)."""
        if getattr(self._held, "operation", None) is not None:
            return nullcontext()
        return self._hold(fcntl.LOCK_SH)

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the lock alone (gc, verify with removal)."""
        with self._hold(fcntl.LOCK_EX):
            yield

    @contextmanager
    def _hold(self, operation: int) -> Iterator[None]:
        held: int | None = getattr(self._held, "operation", None)
        if held is not None:
            if operation == fcntl.LOCK_EX and held != fcntl.LOCK_EX:
                raise RuntimeError("cannot take the gc lock exclusively while sharing it")
            yield
            return
        fd = self._open()
        try:
            fcntl.flock(fd, operation)
            self._held.operation = operation
            yield
        finally:
            self._held.operation = None
            os.close(fd)

    def _open(self) -> int:
        try:
            return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except PermissionError:
            pass
        except OSError as exc:
            raise _unusable(self.path, exc.strerror or str(exc)) from None
        try:
            return os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError as exc:
            raise _unusable(self.path, exc.strerror or str(exc)) from None
