"""The remote cache against a real S3 server (moto's, on loopback, started here).

Two "machines" are two cache directories in one test. No Docker is needed; these are
integration tests because they start a server process and are slower than unit tests.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from agevalx.cache import ActionManifest, CacheStore, OutputRef
from agevalx.cache.backend import ActionId, ObjectId
from agevalx.cache.layered import LayeredStore
from agevalx.cache.remote import RemoteError, RemoteStore, collect_remote_garbage
from agevalx.cache.remote.s3server import CREDENTIALS, LocalS3Server
from agevalx.cache.transfer import all_entries, pull, push, push_refs
from agevalx.cli import main
from agevalx.hashing import digest_json

pytestmark = pytest.mark.integration

_buckets = itertools.count()


@pytest.fixture(scope="module")
def s3_server() -> Iterator[LocalS3Server]:
    with LocalS3Server() as server:
        yield server


@pytest.fixture
def bucket(s3_server: LocalS3Server, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh bucket's URL, with the server's credentials in the environment."""
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    return s3_server.create_bucket(f"cache-{os.getpid()}-{next(_buckets)}")


def _remote(server: LocalS3Server, url: str, **settings: Any) -> RemoteStore:
    return RemoteStore(url, options=server.options, **settings)


def _fill(store: CacheStore, seeds: list[str], tmp: Path) -> list[ActionManifest]:
    """Run-like entries: a result blob, a workspace tree (one file private, one shared)."""
    made = []
    for seed in seeds:
        source = tmp / f"ws-{digest_json(seed)}"
        (source / "sub").mkdir(parents=True, exist_ok=True)
        (source / "own.txt").write_text(f"output of {seed}\n" * 20)
        (source / "sub" / "common.txt").write_text("the same in every workspace\n")
        with store.in_use():
            tree = store.put_tree(source)
            blob = store.put_bytes(json.dumps({"seed": seed, "status": "PASS"}).encode())
            manifest = ActionManifest.create(
                "run",
                digest_json(["s3 test", seed]),
                {
                    "result": OutputRef(digest=blob, type="blob"),
                    "workspace": OutputRef(digest=tree.digest, type="tree"),
                },
                {"seed": seed},
            )
            store.put_action(manifest)
        made.append(manifest)
    return made


def _area_files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for area in ("objects", "trees", "actions")
        for path in sorted((root / area).rglob("*"))
        if path.is_file()
    }


def test_the_server_honours_if_none_match(s3_server, bucket):
    import s3fs

    fs = s3fs.S3FileSystem(endpoint_url=s3_server.endpoint_url, skip_instance_cache=True)
    path = f"{bucket[5:]}/probe"
    fs.pipe_file(path, b"first", mode="create")
    with pytest.raises(FileExistsError):
        fs.pipe_file(path, b"second", mode="create")
    assert fs.cat_file(path) == b"first"

    def create(key: str, body: int) -> bool:
        try:
            fs.pipe_file(key, str(body).encode(), mode="create")
        except FileExistsError:
            return False
        return True

    with ThreadPoolExecutor(max_workers=8) as pool:
        for race in range(10):
            key = f"{bucket[5:]}/race/{race}"
            winners = list(pool.map(lambda n, key=key: create(key, n), range(8)))
            assert winners.count(True) == 1


def test_machine_b_pulls_what_machine_a_pushed(s3_server, bucket, tmp_path):
    with CacheStore(tmp_path / "a") as a, _remote(s3_server, bucket) as remote:
        made = _fill(a, [f"attempt {n}" for n in range(5)], tmp_path)
        pushed = push(a, remote, all_entries(a))
        assert pushed.ok and pushed.entries_copied == 5
        assert pushed.objects_copied == 5 + 5 + 5 + 1  # results, trees, own.txt, common.txt
        again = push(a, remote, all_entries(a))
        assert (again.entries_copied, again.objects_copied, again.bytes_copied) == (0, 0, 0)
    with CacheStore(tmp_path / "b") as b, _remote(s3_server, bucket) as remote:
        pulled = pull(b, remote, all_entries(remote))
        assert pulled.ok and pulled.entries_copied == 5
        assert remote.stats.objects_downloaded == pushed.objects_copied
        assert _area_files(b.root) == _area_files(a.root)
        assert [b.get_action("run", m.key) for m in made] == made


def _push_worker(args: tuple[str, str, dict[str, Any], list[str]]) -> bool:
    root, url, options, seeds = args
    with CacheStore(Path(root)) as store, RemoteStore(url, options=options) as remote:
        _fill(store, seeds, Path(root) / "sources")
        return push(store, remote, all_entries(store)).ok


def test_concurrent_pushers_never_tear_an_entry(s3_server, bucket, tmp_path):
    shared = [f"shared {n}" for n in range(15)]
    jobs = [
        (
            str(tmp_path / name),
            bucket,
            s3_server.options,
            [*shared, *(f"{name} {n}" for n in range(10))],
        )
        for name in ("a", "b")
    ]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        assert pool.map(_push_worker, jobs) == [True, True]
    with CacheStore(tmp_path / "c") as c, _remote(s3_server, bucket) as remote:
        entries = all_entries(remote)
        assert len(entries) == 15 + 2 * 10
        assert all(remote.read_entry(action) is not None for action in entries)
        report = pull(c, remote, entries)
        assert report.ok and report.entries_copied == 35
        assert remote.stats.warnings == []
        seeds = {c.get_action(a.kind, a.key).meta["seed"] for a in entries}  # type: ignore[union-attr]
        assert len(seeds) == 35


def test_a_corrupted_remote_blob_is_detected_and_missed(s3_server, bucket, tmp_path):
    import s3fs

    with CacheStore(tmp_path / "a") as a, _remote(s3_server, bucket) as remote:
        [manifest] = _fill(a, ["to corrupt"], tmp_path)
        push(a, remote, all_entries(a))
    blob = manifest.outputs["result"].digest
    fs = s3fs.S3FileSystem(endpoint_url=s3_server.endpoint_url, skip_instance_cache=True)
    fs.pipe_file(f"{bucket[5:]}/objects/xxh3-128/{blob[:2]}/{blob[2:]}", b"rotten")
    with LayeredStore(tmp_path / "b", _remote(s3_server, bucket)) as b:
        assert b.get_action("run", manifest.key) is None
        stats = b.remote_stats
        assert (stats.hits, stats.misses, stats.read_errors) == (0, 1, 1)
        assert stats.warnings[0].code == "remote_entry_unusable"
        assert "does not match its digest" in stats.warnings[0].message
        assert not b.has_blob(blob)
        [recomputed] = _fill(b, ["to corrupt"], tmp_path / "again")
        assert b.get_action("run", manifest.key) == recomputed


def test_a_badly_signed_entry_is_ignored(s3_server, bucket, tmp_path, monkeypatch):
    with CacheStore(tmp_path / "a") as a, _remote(s3_server, bucket, signing_key=b"attacker") as r:
        [manifest] = _fill(a, ["poisoned"], tmp_path)
        push(a, r, all_entries(a))
    monkeypatch.setenv("AGEVAL_CACHE_SIGNING_KEY", "main's key")
    with LayeredStore(tmp_path / "b", _remote(s3_server, bucket, signing_key=b"main's key")) as b:
        assert b.get_action("run", manifest.key) is None
        assert [w.code for w in b.remote_stats.warnings] == ["remote_entry_bad_signature"]
    with LayeredStore(tmp_path / "c", _remote(s3_server, bucket, signing_key=b"attacker")) as c:
        assert c.get_action("run", manifest.key) == manifest


def test_signed_write_through_is_read_back_by_a_keyed_reader(s3_server, bucket, tmp_path):
    with LayeredStore(tmp_path / "ci", _remote(s3_server, bucket, signing_key=b"k")) as ci:
        [manifest] = _fill(ci, ["from ci"], tmp_path)
        assert ci.remote_stats.uploads == 1
    with LayeredStore(tmp_path / "dev", _remote(s3_server, bucket, signing_key=b"k")) as dev:
        assert dev.get_action("run", manifest.key) == manifest
        assert dev.remote_stats.hits == 1


def test_a_read_only_remote_refuses_uploads(s3_server, bucket, tmp_path):
    with CacheStore(tmp_path / "a") as a, _remote(s3_server, bucket, read_only=True) as remote:
        _fill(a, ["private"], tmp_path)
        with pytest.raises(RemoteError) as caught:
            push(a, remote, all_entries(a))
        assert caught.value.code == "remote_read_only"
    with LayeredStore(tmp_path / "b", _remote(s3_server, bucket, read_only=True)) as b:
        _fill(b, ["also private"], tmp_path / "b-src")
        assert b.remote_stats.uploads == 0
        assert list(b.remote.entries()) == []


def test_an_existing_entry_is_never_replaced(s3_server, bucket, tmp_path):
    with CacheStore(tmp_path / "a") as a, _remote(s3_server, bucket) as remote:
        [first] = _fill(a, ["same key"], tmp_path / "a-src")
        push(a, remote, all_entries(a))
        stored = remote.fs.cat_file(f"{remote.base}/actions/run/{first.key[:2]}/{first.key[2:]}")
    time.sleep(0.01)
    with CacheStore(tmp_path / "b") as b, _remote(s3_server, bucket) as remote:
        [second] = _fill(b, ["same key"], tmp_path / "b-src")
        assert second.created != first.created
        report = push(b, remote, all_entries(b))
        assert report.ok and report.entries_present == 1 and report.entries_copied == 0
        path = f"{remote.base}/actions/run/{first.key[:2]}/{first.key[2:]}"
        assert remote.fs.cat_file(path) == stored
        result = ObjectId("blob", first.outputs["result"].digest)
        assert remote.write_object(result, b.get_bytes(result.digest)) is False


def test_a_dead_remote_leaves_the_cache_working(tmp_path, monkeypatch):
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    server = LocalS3Server()
    server.start()
    url = server.create_bucket("doomed")
    options = server.options
    with LayeredStore(tmp_path / "a", RemoteStore(url, options=options)) as a:
        [before] = _fill(a, ["before the outage"], tmp_path / "before")
        assert a.remote_stats.uploads == 1
        server.stop()
        started = time.monotonic()
        assert a.get_action("run", "0" * 32) is None
        made = _fill(a, ["during 1", "during 2"], tmp_path / "during")
        assert [a.get_action("run", m.key) for m in made] == made
        assert a.get_action("run", before.key) == before
        assert time.monotonic() - started < 60
        stats = a.remote_stats
        assert not a.remote.available
        assert [w.code for w in stats.warnings] == ["remote_unavailable"]
        assert (stats.misses, stats.write_errors, stats.uploads) == (1, 2, 1)
    with CacheStore(tmp_path / "b") as b, RemoteStore(url, options=options) as dead:
        _fill(b, ["never pushed"], tmp_path / "b-src")
        report = push(b, dead, all_entries(b))
        assert not report.ok and dead.stats.write_errors == 1


def test_a_wrong_port_is_an_outage_not_a_crash(tmp_path, monkeypatch):
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    remote = RemoteStore("s3://nowhere", options={"endpoint_url": "http://127.0.0.1:9"})
    with LayeredStore(tmp_path / "a", remote) as a:
        assert a.get_action("run", "0" * 32) is None
        [made] = _fill(a, ["offline"], tmp_path)
        assert a.get_action("run", made.key) == made
        assert a.remote_stats.write_errors == 1
        assert a.remote_stats.warnings[0].code == "remote_unavailable"


def test_remote_gc_deletes_what_no_ref_reaches(s3_server, bucket, tmp_path):
    with CacheStore(tmp_path / "a") as a, _remote(s3_server, bucket) as remote:
        made = _fill(a, [f"gc {n}" for n in range(3)], tmp_path)
        a.set_ref("leaderboard", [f"run/{made[1].key}"])
        push(a, remote, all_entries(a))
        push_refs(a, remote)
        report = collect_remote_garbage(remote, keep_newest_per_kind=0)
        assert (report.entries_kept, report.entries_removed) == (1, 2)
        assert (report.trees_removed, report.blobs_removed) == (2, 4)
        assert [action.key for action in remote.entries()] == [made[1].key]
    with CacheStore(tmp_path / "b") as b, _remote(s3_server, bucket) as remote:
        assert pull(b, remote, all_entries(remote)).ok
        assert b.get_action("run", made[1].key) == made[1]


def test_the_cli_pushes_and_pulls_through_a_configured_s3_remote(
    s3_server, bucket, tmp_path, capsys
):
    with CacheStore(tmp_path / "a") as a:
        made = _fill(a, ["cli 1", "cli 2"], tmp_path)
    for machine in ("a", "b"):
        argv = [
            "cache",
            "remote",
            "add",
            "shared",
            bucket,
            "-o",
            f"endpoint_url={s3_server.endpoint_url}",
        ]
        assert main([*argv, "--cache-dir", str(tmp_path / machine)]) == 0
    assert main(["cache", "push", "--all", "--cache-dir", str(tmp_path / "a")]) == 0
    capsys.readouterr()
    assert main(["cache", "pull", "--all", "--json", "--cache-dir", str(tmp_path / "b")]) == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["entries_copied"], document["remote"]) == (2, "shared")
    with CacheStore(tmp_path / "b") as b:
        assert [b.get_action("run", m.key) for m in made] == made


def test_layered_lookups_from_many_threads(s3_server, bucket, tmp_path):
    with CacheStore(tmp_path / "a") as a, _remote(s3_server, bucket) as remote:
        made = _fill(a, [f"thread {n}" for n in range(12)], tmp_path)
        push(a, remote, all_entries(a))
    with LayeredStore(tmp_path / "b", _remote(s3_server, bucket)) as b:
        barrier = threading.Barrier(4)

        def look(offset: int) -> list[bool]:
            barrier.wait()
            return [b.get_action("run", m.key) == m for m in made[offset:] + made[:offset]]

        with ThreadPoolExecutor(max_workers=4) as pool:
            assert all(all(found) for found in pool.map(look, range(4)))
        assert b.remote_stats.warnings == []
        assert b.remote_stats.hits >= 12


def seeds(count: int) -> list[str]:
    return [f"attempt {n}" for n in range(count)]


def _paged(remote: RemoteStore, keys_per_page: int) -> None:
    """Make the server's listings come in pages of `keys_per_page` keys (S3 gives 1,000), so a
    listing's page budget runs out on a small bucket."""
    call = remote.fs.call_s3

    def call_s3(method: str, *args: Any, **kwargs: Any) -> Any:
        if method == "list_objects_v2":
            kwargs["MaxKeys"] = keys_per_page
        return call(method, *args, **kwargs)

    remote.fs.call_s3 = call_s3


def test_a_push_decides_what_is_missing_from_listings_not_a_request_per_object(
    s3_server, bucket, tmp_path
):
    with CacheStore(tmp_path / "a") as a, _remote(s3_server, bucket) as remote:
        _fill(a, seeds(80), tmp_path)
        first = push(a, remote, all_entries(a))
        assert first.ok and first.entries_copied == 80 and first.objects_copied == 241
        written = first.entries_copied + first.objects_copied
        # An empty bucket: the VERSION and GENERATION reads and writes, one listing per area,
        # one PUT each.
        assert remote.requests <= written + 10, remote.requests
        before = remote.requests
        again = push(a, remote, all_entries(a))
        assert (again.entries_copied, again.objects_copied, again.entries_present) == (0, 0, 80)
        assert again.objects_present == 241 and again.remembered
        assert remote.requests - before == 1  # GENERATION: a's last push left it whole
        remote.fs.rm(f"{remote.base}/GENERATION")  # as a remote made anew would be
        before = remote.requests
        asked = push(a, remote, all_entries(a))
        assert (asked.entries_copied, asked.objects_copied, asked.entries_present) == (0, 0, 80)
        assert not asked.remembered
        # GENERATION read and made, VERSION, then one listing each of blobs, trees and actions
        assert remote.requests - before <= 6, remote.requests - before
    with CacheStore(tmp_path / "b") as b, _remote(s3_server, bucket) as remote:
        pulled = pull(b, remote, all_entries(remote))
        assert pulled.ok and pulled.entries_copied == 80
        before = remote.requests
        again = pull(b, remote, all_entries(remote))
        assert again.ok and (again.entries_copied, again.objects_copied) == (0, 0)
        assert again.entries_present == 80
        assert remote.requests - before == 1  # the listing of actions/ that all_entries made


def test_a_listing_cut_short_by_its_budget_leaves_the_rest_to_one_request_each(
    s3_server, bucket, tmp_path
):
    with CacheStore(tmp_path / "a") as a, _remote(s3_server, bucket) as remote:
        made = {ActionId.of(manifest): manifest for manifest in _fill(a, seeds(80), tmp_path)}
        pushed = sorted(made)[:40]
        assert push(a, remote, pushed).ok
        results = {
            action: ObjectId("blob", m.outputs["result"].digest) for action, m in made.items()
        }
        # 80 digests asked about: 80 / 16 = 5 pages of 4 keys list 20 of the bucket's 81 blobs;
        # the results past the 20th key are asked about one HEAD each.
        asked = sorted(obj.digest for obj in results.values())
        held = sorted(f.name for f in remote.list_area("objects") if f.name > asked[0][:-1])
        _paged(remote, 4)
        before = remote.requests
        missing = remote.missing_objects(results.values())
        assert missing == {results[action] for action in made if action not in pushed}
        heads = [digest for digest in asked if digest > held[19]]
        assert 0 < len(heads) < len(asked)
        assert remote.requests - before == 5 + len(heads)


def test_a_listed_entry_not_byte_identical_is_read_before_it_counts_as_present(
    s3_server, bucket, tmp_path
):
    with CacheStore(tmp_path / "a") as a:
        _fill(a, seeds(70), tmp_path)
        with _remote(s3_server, bucket) as unsigned:
            assert push(a, unsigned, all_entries(a)).ok
        # A keyed pusher finds 70 unsigned entries listed: their bytes differ from what it would
        # upload, so each is read, found unsigned, and cannot be replaced (create-only).
        with _remote(s3_server, bucket, signing_key=b"k" * 32) as keyed:
            again = push(a, keyed, all_entries(a))
            assert again.entries_present == 0 and again.entries_copied == 0
            assert len(again.skipped) == 70
            assert all("already holds an unusable entry" in s.reason for s in again.skipped)
            # Each is read twice: when the push decides, and when its write is refused.
            assert keyed.stats.read_errors == 140
