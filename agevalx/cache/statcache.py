"""Remembered file digests, so unchanged files are not read again.

A small SQLite database maps (device, inode) to the size, mtime, ctime and digest seen
when the file was last hashed. The ctime matters for inodes the file system reuses: a file
extracted from an archive gets its mtime from the archive, so a new file in a deleted
file's inode can show that file's size and mtime, but never its ctime. It is an
accelerator only: never part of a key, safe to delete, and any SQLite failure makes it
behave as empty.

The racy-mtime problem (git's "racily clean" files): a file written in the same clock
tick as it was hashed can change again without its mtime changing. An entry is
therefore trusted only if the file's mtime was at least `RACY_WINDOW_NS` older than the
moment the entry was recorded; otherwise the file is hashed again.

It also keeps, per scope (a container's snapshot root), the last listing a checkpoint
took of that directory (see `agevalx.runner.incremental`), so the next checkpoint reads
only what changed since, even from another process that reattached to the container.

And, per remote, the closures a push found whole there, under the remote's GENERATION token
(`agevalx.cache.transfer`): the same push again asks the remote for that token only.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType

from agevalx.fsutil import RACY_WINDOW_NS

TREE_STATES_KEPT = 64
"""Scopes whose last listing is kept; older ones (finished containers) are dropped."""
PUSHES_KEPT = 256
"""Closures remembered as pushed, over every remote; older ones are asked of the remote."""
QUERY_INODES = 500
"""Inodes per lookup query, below SQLite's oldest limit of 999 bound parameters."""

_Row = tuple[int, int, int, str, int]
"""size, mtime_ns, ctime_ns, digest, recorded_ns"""

_SCHEMA = """
DROP TABLE IF EXISTS stat;
CREATE TABLE IF NOT EXISTS file_stat (
    dev INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    digest TEXT NOT NULL,
    recorded_ns INTEGER NOT NULL,
    PRIMARY KEY (dev, ino)
);
CREATE TABLE IF NOT EXISTS tree_state (
    scope TEXT PRIMARY KEY,
    recorded_ns INTEGER NOT NULL,
    state BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS pushed (
    remote TEXT NOT NULL,
    closure TEXT NOT NULL,
    generation TEXT NOT NULL,
    recorded_ns INTEGER NOT NULL,
    PRIMARY KEY (remote, closure)
)
"""


class StatCache:
    """Digest memo keyed by (device, inode, size, mtime_ns, ctime_ns); thread-safe."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = self._connect()

    def _connect(self) -> sqlite3.Connection | None:
        try:
            # not Path.mkdir(exist_ok=True), which stats the folder when it is there
            with contextlib.suppress(FileExistsError):
                os.mkdir(self.path.parent)
            db = sqlite3.connect(self.path, timeout=10, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
            db.commit()
        except (sqlite3.Error, OSError):
            return None
        return db

    def lookup(self, st: os.stat_result) -> str | None:
        """The digest recorded for this exact file state, if it can be trusted."""
        return self.lookup_many([st])[0]

    def lookup_many(self, stats: Sequence[os.stat_result]) -> list[str | None]:
        """`lookup` of each file state, in one query per device and `QUERY_INODES` files:
        a tree asks once, not once per file."""
        rows = self._query_many(stats)
        return [_trusted(rows.get((st.st_dev, st.st_ino)), st) for st in stats]

    def _query_many(self, stats: Sequence[os.stat_result]) -> dict[tuple[int, int], _Row]:
        if self._db is None or not stats:
            return {}
        inodes: dict[int, list[int]] = {}
        for st in stats:
            inodes.setdefault(st.st_dev, []).append(st.st_ino)
        found: dict[tuple[int, int], _Row] = {}
        with self._lock:
            try:
                for dev, numbers in inodes.items():
                    for start in range(0, len(numbers), QUERY_INODES):
                        chunk = numbers[start : start + QUERY_INODES]
                        marks = ",".join("?" * len(chunk))
                        cursor = self._db.execute(
                            "SELECT ino, size, mtime_ns, ctime_ns, digest, recorded_ns"
                            f" FROM file_stat WHERE dev = ? AND ino IN ({marks})",
                            (dev, *chunk),
                        )
                        found.update(((dev, row[0]), row[1:]) for row in cursor)
            except sqlite3.Error:
                return {}
        return found

    def record(self, items: Iterable[tuple[os.stat_result, str]], recorded_ns: int) -> None:
        """Remember digests; `recorded_ns` must be no later than when the files were stat'ed."""
        rows = [
            (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, digest, recorded_ns)
            for st, digest in items
        ]
        if self._db is None or not rows:
            return
        with self._lock:
            try:
                with self._db:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO file_stat VALUES (?, ?, ?, ?, ?, ?, ?)", rows
                    )
            except sqlite3.Error:
                return

    def tree_state(self, scope: str) -> bytes | None:
        """The state last remembered for `scope`, if any."""
        row = self._one("SELECT state FROM tree_state WHERE scope = ?", (scope,))
        return None if row is None or not isinstance(row[0], bytes) else row[0]

    def remember_tree_state(self, scope: str, state: bytes, recorded_ns: int) -> None:
        """Replace the state of `scope`; only the `TREE_STATES_KEPT` newest scopes stay."""
        self._keep_newest("tree_state", (scope, recorded_ns, state), TREE_STATES_KEPT)

    def pushed(self, remote: str, closure: str) -> str | None:
        """The GENERATION token of `remote` under which `closure` was found whole there."""
        row = self._one(
            "SELECT generation FROM pushed WHERE remote = ? AND closure = ?", (remote, closure)
        )
        return None if row is None else str(row[0])

    def remember_pushed(self, remote: str, closure: str, generation: str) -> None:
        """Record that `closure` was whole on `remote` under `generation`; only the
        `PUSHES_KEPT` newest records stay."""
        self._keep_newest("pushed", (remote, closure, generation, time.time_ns()), PUSHES_KEPT)

    def _one(self, query: str, parameters: tuple[object, ...]) -> tuple[object, ...] | None:
        """The first row of `query`; None when there is none or the database fails."""
        if self._db is None:
            return None
        with self._lock:
            try:
                row: tuple[object, ...] | None = self._db.execute(query, parameters).fetchone()
            except sqlite3.Error:
                return None
        return row

    def _keep_newest(self, table: str, row: tuple[object, ...], kept: int) -> None:
        """Insert or replace `row` in `table` (one of this module's, its `recorded_ns`
        column a time), then drop all but its `kept` newest rows."""
        if self._db is None:
            return
        marks = ", ".join("?" * len(row))
        with self._lock:
            try:
                with self._db:
                    self._db.execute(f"INSERT OR REPLACE INTO {table} VALUES ({marks})", row)
                    self._db.execute(
                        f"DELETE FROM {table} WHERE rowid NOT IN (SELECT rowid FROM {table}"
                        " ORDER BY recorded_ns DESC LIMIT ?)",
                        (kept,),
                    )
            except sqlite3.Error:
                return

    def close(self) -> None:
        if self._db is not None:
            with self._lock:
                self._db.close()
                self._db = None

    def __enter__(self) -> StatCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _trusted(row: _Row | None, st: os.stat_result) -> str | None:
    """The row's digest if it describes exactly this file state, recorded after the racy
    window of its mtime."""
    if row is None:
        return None
    size, mtime_ns, ctime_ns, digest, recorded_ns = row
    if (size, mtime_ns, ctime_ns) != (st.st_size, st.st_mtime_ns, st.st_ctime_ns):
        return None
    if recorded_ns - mtime_ns < RACY_WINDOW_NS:
        return None
    return str(digest)
