"""Several processes fill one cache at once; gc waits for writers holding the lock."""

from __future__ import annotations

import multiprocessing
import threading
import time
from pathlib import Path

import pytest

from agevalx.cache import (
    ActionManifest,
    CacheStore,
    OutputRef,
    collect_garbage,
    verify_cache,
)
from agevalx.hashing import digest_json

pytestmark = pytest.mark.unit

WORKERS = 4
ROUNDS = 15


def _key(*parts: object) -> str:
    return digest_json(["test", *parts])


def _write_everything(args: tuple[str, str, int]) -> list[str]:
    """One worker: shared and private blobs, a shared tree, shared and private actions."""
    root, source, worker = args
    written: list[str] = []
    with CacheStore(Path(root)) as store:
        tree = store.put_tree(Path(source))
        for index in range(ROUNDS):
            with store.in_use():
                shared = store.put_bytes(f"shared {index}".encode() * 1000)
                private = store.put_bytes(f"worker {worker} round {index}".encode())
                outputs = {
                    "shared": OutputRef(digest=shared, type="blob"),
                    "tree": OutputRef(digest=tree.digest, type="tree"),
                }
                store.put_action(ActionManifest.create("run", _key("shared", index), outputs))
                mine = {"private": OutputRef(digest=private, type="blob")}
                store.put_action(ActionManifest.create("evaluate", _key(worker, index), mine))
            written += [shared, private]
    return written


def test_concurrent_writers_leave_an_intact_cache(tmp_path: Path) -> None:
    source = tmp_path / "source"
    (source / "sub").mkdir(parents=True)
    for index in range(20):
        (source / "sub" / f"f{index}.txt").write_text(f"file {index}\n" * 500)
    root = tmp_path / "cache"
    jobs = [(str(root), str(source), worker) for worker in range(WORKERS)]
    with multiprocessing.get_context("spawn").Pool(WORKERS) as pool:
        written = [digest for digests in pool.map(_write_everything, jobs) for digest in digests]

    with CacheStore(root) as store:
        report = verify_cache(store)
        assert report.ok, report
        assert report.objects_checked == ROUNDS * (WORKERS + 1) + 20
        for digest in written:
            assert store.has_blob(digest)
        for index in range(ROUNDS):
            assert store.get_action("run", _key("shared", index)) is not None
            for worker in range(WORKERS):
                assert store.get_action("evaluate", _key(worker, index)) is not None
        assert list(store.tmp.iterdir()) == []


def test_gc_waits_for_a_writer_between_blob_and_action(store: CacheStore) -> None:
    blob_stored = threading.Event()
    events: list[str] = []

    def writer() -> None:
        with store.in_use():
            digest = store.put_bytes(b"not yet referenced")
            blob_stored.set()
            time.sleep(0.3)
            outputs = {"out": OutputRef(digest=digest, type="blob")}
            store.put_action(ActionManifest.create("run", _key("late"), outputs))
            events.append("action written")

    thread = threading.Thread(target=writer)
    thread.start()
    blob_stored.wait()
    collect_garbage(store, keep_newest_per_kind=10)
    events.append("gc done")
    thread.join()
    assert events == ["action written", "gc done"]
    assert store.get_action("run", _key("late")) is not None
