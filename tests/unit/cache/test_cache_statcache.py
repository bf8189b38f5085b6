"""The stat cache: same digests as cold hashing, re-hash on change, racy mtimes."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agevalx.cache import StatCache, hash_tree
from agevalx.cache import tree as tree_module
from agevalx.cache.store import CacheStore
from agevalx.fsutil import RACY_WINDOW_NS

pytestmark = pytest.mark.unit

HOUR_NS = 3600 * 1_000_000_000


def _age(path: Path, ns_ago: int = HOUR_NS) -> None:
    past = time.time_ns() - ns_ago
    os.utime(path, ns=(past, past))


@pytest.fixture
def stat_cache(tmp_path: Path) -> Iterator[StatCache]:
    with StatCache(tmp_path / "statcache.db") as opened:
        yield opened


@pytest.fixture
def files(tmp_path: Path) -> Path:
    root = tmp_path / "files"
    (root / "sub").mkdir(parents=True)
    for name in ("one.txt", "two.txt", "sub/three.txt"):
        (root / name).write_text(f"content of {name}\n")
        _age(root / name)
    return root


def test_warm_run_matches_cold_hashing_without_reading(
    files: Path, stat_cache: StatCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    cold = hash_tree(files)
    assert hash_tree(files, stat_cache=stat_cache) == cold

    def no_reads(path: str, walked: os.stat_result | None = None) -> tree_module.Hashed:
        raise AssertionError(f"{path} was read although the stat cache knew it")

    monkeypatch.setattr(tree_module, "hash_file", no_reads)
    assert hash_tree(files, stat_cache=stat_cache) == cold


def test_modified_file_of_the_same_size_is_rehashed(files: Path, stat_cache: StatCache) -> None:
    before = hash_tree(files, stat_cache=stat_cache)
    target = files / "one.txt"
    target.write_text(target.read_text().upper())
    _age(target, HOUR_NS // 2)
    after = hash_tree(files, stat_cache=stat_cache)
    assert after == hash_tree(files)
    assert after.digest != before.digest


def test_entry_recorded_within_the_racy_window_is_not_trusted(
    files: Path, stat_cache: StatCache
) -> None:
    target = files / "two.txt"
    target.write_text("fresh content\n")
    st = target.stat()
    stat_cache.record([(st, "0" * 32)], recorded_ns=st.st_mtime_ns + RACY_WINDOW_NS // 2)
    assert stat_cache.lookup(st) is None
    entries = {entry.path: entry for entry in hash_tree(files, stat_cache=stat_cache).entries}
    assert entries["two.txt"].digest != "0" * 32


def test_entry_recorded_after_the_racy_window_is_trusted(
    files: Path, stat_cache: StatCache
) -> None:
    st = (files / "two.txt").stat()
    stat_cache.record([(st, "0" * 32)], recorded_ns=st.st_mtime_ns + RACY_WINDOW_NS)
    assert stat_cache.lookup(st) == "0" * 32


def test_freshly_written_files_are_rehashed_every_time(
    files: Path, stat_cache: StatCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    (files / "new.txt").write_text("just written\n")
    hash_tree(files, stat_cache=stat_cache)
    read: list[str] = []
    real_hash_file = tree_module.hash_file

    def counting(path: str, walked: os.stat_result | None = None) -> tree_module.Hashed:
        read.append(os.path.basename(path))
        return real_hash_file(path, walked)

    monkeypatch.setattr(tree_module, "hash_file", counting)
    hash_tree(files, stat_cache=stat_cache)
    assert read == ["new.txt"]


def test_unusable_database_behaves_as_empty(files: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"this is not sqlite" * 100)
    with StatCache(broken) as stat_cache:
        assert stat_cache.lookup((files / "one.txt").stat()) is None
        assert hash_tree(files, stat_cache=stat_cache) == hash_tree(files)


def test_same_size_rewrite_in_place_with_its_mtime_restored_is_rehashed(
    files: Path, stat_cache: StatCache
) -> None:
    """Inode, size and mtime all as recorded (as for an extracted file that landed in a
    deleted file's inode with that file's size and archive mtime): the ctime tells."""
    target = files / "one.txt"
    before = hash_tree(files, stat_cache=stat_cache)
    st = target.stat()
    with target.open("r+b") as handle:
        handle.write(b"C" * st.st_size)
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = target.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        st.st_ino,
        st.st_size,
        st.st_mtime_ns,
    )
    assert hash_tree(files, stat_cache=stat_cache) == hash_tree(files) != before


def test_transient_trees_are_neither_looked_up_nor_recorded(tmp_path: Path, files: Path) -> None:
    with CacheStore(tmp_path / "cache") as store:
        store.put_tree(files, transient=True)
        assert all(store.stat_cache.lookup(path.stat()) is None for path in files.rglob("*.txt"))
        store.put_tree(files)
        assert all(store.stat_cache.lookup(path.stat()) for path in files.rglob("*.txt"))


def test_a_tree_asks_the_stat_cache_once_for_all_its_files(
    tmp_path: Path, stat_cache: StatCache
) -> None:
    root = tmp_path / "many"
    for index in range(700):  # more files than one query holds
        (root / f"d{index % 7}").mkdir(parents=True, exist_ok=True)
        (root / f"d{index % 7}" / f"{index}.txt").write_text(f"{index}\n")
        _age(root / f"d{index % 7}" / f"{index}.txt")
    cold = hash_tree(root, stat_cache=stat_cache)
    queries: list[str] = []
    assert stat_cache._db is not None
    stat_cache._db.set_trace_callback(queries.append)
    assert hash_tree(root, stat_cache=stat_cache) == cold
    selects = [query for query in queries if query.startswith("SELECT")]
    assert len(selects) == 2  # 700 inodes of one device: 500 + 200


def test_lookup_many_answers_each_file_as_lookup_does(files: Path, stat_cache: StatCache) -> None:
    hash_tree(files, stat_cache=stat_cache)
    (files / "one.txt").write_text("changed since\n")
    (files / "unknown.txt").write_text("never hashed\n")
    stats = [path.stat() for path in sorted(files.rglob("*.txt"))]
    assert stat_cache.lookup_many(stats) == [stat_cache.lookup(st) for st in stats]
    assert [digest is None for digest in stat_cache.lookup_many(stats)] == [
        True,  # one.txt: rewritten
        False,  # sub/three.txt
        False,  # two.txt
        True,  # unknown.txt
    ]
    assert stat_cache.lookup_many([]) == []


def test_the_stat_cache_has_a_folder_and_an_old_one_at_the_root_is_dropped(
    tmp_path: Path,
) -> None:
    root = tmp_path / "cache"
    with CacheStore(root):
        pass
    (root / "statcache.db").write_bytes(b"a stat cache of an older layout, closed")
    with CacheStore(root) as store:
        assert store.stat_cache.path == root / "statcache" / "statcache.db"
    assert not (root / "statcache.db").exists()
    assert (root / "statcache" / "statcache.db").is_file()


def test_an_old_stat_cache_an_older_ageval_has_open_is_left_to_it(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    with CacheStore(root):
        pass
    for name in ("statcache.db", "statcache.db-wal", "statcache.db-shm"):
        (root / name).write_bytes(b"open in an older ageval (SQLite keeps -wal and -shm)")
    with CacheStore(root):
        pass
    assert (root / "statcache.db").exists() and (root / "statcache.db-wal").exists()
