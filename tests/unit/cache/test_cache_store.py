"""Blobs, action entries and refs: round trips, verification on read, the hit rule."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from agevalx.cache import ActionManifest, CacheError, CacheStore, OutputRef, layout
from agevalx.cache.store import LIST_SHARD_AFTER, PresentObjects
from agevalx.hashing import digest_bytes, digest_file

pytestmark = pytest.mark.unit

KEY = "0123456789abcdef0123456789abcdef"


def _blob_action(store: CacheStore, data: bytes, key: str = KEY) -> ActionManifest:
    digest = store.put_bytes(data)
    manifest = ActionManifest.create(
        "run", key, {"out": OutputRef(digest=digest, type="blob")}, {"status": "ok"}
    )
    store.put_action(manifest)
    return manifest


def _corrupt(path: Path, data: bytes) -> None:
    os.chmod(path, 0o644)
    path.write_bytes(data)


def test_digest_of_ageval_is_pinned() -> None:
    assert digest_bytes(b"ageval") == "a39fa71cc7f200da29a61d68f6b4c3e3"


def test_put_bytes_round_trips_through_a_sharded_object_path(store: CacheStore) -> None:
    digest = store.put_bytes(b"ageval")
    assert digest == "a39fa71cc7f200da29a61d68f6b4c3e3"
    path = store.root / "objects" / "xxh3-128" / "a3" / "9fa71cc7f200da29a61d68f6b4c3e3"
    assert path.read_bytes() == b"ageval"
    assert store.has_blob(digest)
    assert store.get_bytes(digest) == b"ageval"


def test_new_cache_writes_its_layout_version(store: CacheStore) -> None:
    assert (store.root / "VERSION").read_text() == "ageval-cache 1\n"
    for area in ("objects/xxh3-128", "trees/xxh3-128", "actions", "refs", "tmp"):
        assert (store.root / area).is_dir()


def test_cache_of_another_layout_version_is_refused(tmp_path: Path) -> None:
    (tmp_path / "VERSION").write_text("ageval-cache 99\n")
    with pytest.raises(CacheError) as caught:
        CacheStore(tmp_path)
    assert caught.value.code == "cache_version_mismatch"


def test_cache_root_that_is_a_file_is_unwritable(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(CacheError) as caught:
        CacheStore(tmp_path / "file")
    assert caught.value.code == "cache_unwritable"


def test_put_file_streams_a_multi_chunk_file(store: CacheStore, tmp_path: Path) -> None:
    source = tmp_path / "big.bin"
    source.write_bytes(os.urandom(3 * (1 << 20) + 17))
    digest = store.put_file(source)
    assert digest == digest_file(source)
    assert store.get_bytes(digest) == source.read_bytes()
    assert list(store.tmp.iterdir()) == []


def test_open_and_export_return_verified_content(store: CacheStore, tmp_path: Path) -> None:
    digest = store.put_bytes(b"payload")
    with store.open_blob(digest) as handle:
        assert handle.read() == b"payload"
    store.export_blob(digest, tmp_path / "out.bin")
    assert (tmp_path / "out.bin").read_bytes() == b"payload"


def test_storing_the_same_blob_twice_keeps_one_object(store: CacheStore) -> None:
    assert store.put_bytes(b"same") == store.put_bytes(b"same")
    assert sum(1 for _ in layout.iter_sharded(layout.object_dir(store.root))) == 1


def test_corrupted_blob_is_detected_on_read_and_action_misses(store: CacheStore) -> None:
    manifest = _blob_action(store, b"good content")
    digest = manifest.outputs["out"].digest
    _corrupt(layout.object_path(store.root, digest), b"evil content")
    with pytest.raises(CacheError) as caught:
        store.get_bytes(digest)
    assert caught.value.code == "cache_corrupt_object"
    assert store.get_action("run", KEY) is None


@pytest.mark.parametrize("reader", ["open_blob", "export_blob"])
def test_every_blob_reader_verifies(store: CacheStore, tmp_path: Path, reader: str) -> None:
    digest = store.put_bytes(b"x" * 100)
    _corrupt(layout.object_path(store.root, digest), b"y" * 100)
    with pytest.raises(CacheError) as caught:
        if reader == "open_blob":
            store.open_blob(digest)
        else:
            store.export_blob(digest, tmp_path / "out")
    assert caught.value.code == "cache_corrupt_object"
    assert not (tmp_path / "out").exists()


def test_missing_blob_named_by_an_action_is_a_miss(store: CacheStore) -> None:
    manifest = _blob_action(store, b"will vanish")
    digest = manifest.outputs["out"].digest
    layout.object_path(store.root, digest).unlink()
    assert store.get_action("run", KEY) is None
    with pytest.raises(CacheError) as caught:
        store.get_bytes(digest)
    assert caught.value.code == "cache_missing_object"


def test_action_round_trips_with_its_meta(store: CacheStore) -> None:
    manifest = _blob_action(store, b"result")
    found = store.get_action("run", KEY)
    assert found == manifest
    assert found is not None and found.meta == {"status": "ok"}
    assert store.get_action("run", "f" * 32) is None


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],
        lambda data: b"",
        lambda data: b"\xff\xfe garbage",
        lambda data: data.replace(b'"schema":1', b'"schema":2'),
        lambda data: data.replace(KEY.encode(), b"f" * 32),
        lambda data: data.replace(b'"kind":"run"', b'"kind":"evaluate"'),
    ],
    ids=["truncated", "empty", "garbage", "future-schema", "other-key", "other-kind"],
)
def test_damaged_action_entry_is_a_miss(store: CacheStore, damage: object) -> None:
    _blob_action(store, b"result")
    path = layout.action_path(store.root, "run", KEY)
    assert callable(damage)
    path.write_bytes(damage(path.read_bytes()))
    assert store.get_action("run", KEY) is None


@pytest.mark.parametrize("planted", ["fifo", "directory", "large"])
def test_an_action_entry_that_is_not_a_small_file_is_a_miss(
    store: CacheStore, planted: str
) -> None:
    """An entry is read through one descriptor: a fifo there is not waited on, a directory
    or a file past one read is still read whole (and refused when it does not parse)."""
    manifest = _blob_action(store, b"result")
    path = layout.action_path(store.root, "run", KEY)
    path.unlink()
    if planted == "fifo":
        os.mkfifo(path)
    elif planted == "directory":
        path.mkdir()
    else:
        data = manifest.canonical_bytes()
        path.write_bytes(data[:-1] + b" " * (1 << 17) + data[-1:])
        assert store.get_action("run", KEY) == manifest
        path.write_bytes(data + b" " * (1 << 17) + b"x")
    assert store.get_action("run", KEY) is None


def test_put_action_refuses_outputs_that_are_not_stored(store: CacheStore) -> None:
    manifest = ActionManifest.create("run", KEY, {"out": OutputRef(digest="a" * 32, type="blob")})
    with pytest.raises(CacheError) as caught:
        store.put_action(manifest)
    assert caught.value.code == "cache_missing_object"
    assert not layout.action_path(store.root, "run", KEY).exists()


@pytest.mark.parametrize(
    ("kind", "key"),
    [
        ("../objects", KEY),
        ("Run", KEY),
        ("run/x", KEY),
        ("run", "../../../../etc/passwd"),
        ("run", KEY.upper()),
        ("run", KEY[:-1]),
        ("run", KEY + "\n"),
    ],
)
def test_illegal_kinds_and_keys_raise_a_coded_error(store: CacheStore, kind: str, key: str) -> None:
    with pytest.raises(CacheError) as caught:
        store.get_action(kind, key)
    assert caught.value.code == "cache_invalid_name"


@pytest.mark.parametrize("digest", ["../x", "A" * 32, "a" * 31, "/etc/passwd"])
def test_illegal_digests_raise_a_coded_error(store: CacheStore, digest: str) -> None:
    with pytest.raises(CacheError) as caught:
        store.get_bytes(digest)
    assert caught.value.code == "cache_invalid_name"


def test_action_with_nan_meta_is_refused() -> None:
    with pytest.raises(CacheError) as caught:
        ActionManifest.create("run", KEY, {}, {"score": float("nan")})
    assert caught.value.code == "cache_invalid_action"


def test_refs_are_set_listed_and_deleted(store: CacheStore) -> None:
    store.set_ref("nightly", [f"run/{KEY}", "b" * 32, f"run/{KEY}"])
    assert store.list_refs() == {"nightly": ("b" * 32, f"run/{KEY}")}
    assert store.delete_ref("nightly")
    assert store.list_refs() == {}


@pytest.mark.parametrize(("name", "target"), [("../x", "a" * 32), ("ok", "../../etc")])
def test_illegal_refs_raise_a_coded_error(store: CacheStore, name: str, target: str) -> None:
    with pytest.raises(CacheError) as caught:
        store.set_ref(name, [target])
    assert caught.value.code == "cache_invalid_name"


def test_writes_leave_no_staging_files(store: CacheStore) -> None:
    _blob_action(store, b"one")
    store.set_ref("r", [f"run/{KEY}"])
    assert list(store.tmp.iterdir()) == []


def test_lookups_sharing_a_presence_memo_check_each_output_once(
    store: CacheStore, make_action: Callable[..., ActionManifest]
) -> None:
    first = make_action(store, "one", {"a.txt": "same tree"})
    second = make_action(store, "two", {"a.txt": "same tree"})
    tree = first.outputs["workspace"].digest
    assert second.outputs["workspace"].digest == tree
    present: set[tuple[str, str]] = set()
    with store.in_use():
        assert store.get_action("run", first.key, present) == first
        assert ("tree", tree) in present
        assert ("blob", first.outputs["result"].digest) in present
        # The memo answers for the shared tree: removing it now is not seen through it,
        # only by a lookup without the memo (which a plan holding the gc lock never needs).
        layout.tree_path(store.root, tree).unlink()
        assert store.get_action("run", second.key, present) == second
        assert store.get_action("run", second.key) is None


def test_an_incomplete_output_never_enters_the_presence_memo(
    store: CacheStore, make_action: Callable[..., ActionManifest]
) -> None:
    manifest = make_action(store, "one")
    blob = manifest.outputs["result"].digest
    layout.object_path(store.root, blob).unlink()
    present: set[tuple[str, str]] = set()
    assert store.get_action("run", manifest.key, present) is None
    assert ("blob", blob) not in present
    assert ("tree", manifest.outputs["workspace"].digest) in present


def _blobs_in_one_shard(store: CacheStore, count: int, shard: str = "5a") -> list[str]:
    """Store `count` blobs whose digests all start with `shard`."""
    digests: list[str] = []
    seed = 0
    while len(digests) < count:
        data = f"blob {seed}".encode()
        seed += 1
        if digest_bytes(data).startswith(shard):
            digests.append(store.put_bytes(data))
    return digests


def _blob_entries(store: CacheStore, digests: list[str]) -> list[ActionManifest]:
    made = []
    for index, digest in enumerate(digests):
        manifest = ActionManifest.create(
            "run", digest_bytes(b"key %d" % index), {"out": OutputRef(digest=digest, type="blob")}
        )
        store.put_action(manifest)
        made.append(manifest)
    return made


def test_a_presence_memo_lists_a_shard_asked_about_often_and_trusts_only_what_it_lists(
    store: CacheStore,
) -> None:
    """Past `LIST_SHARD_AFTER` checks in one small shard directory the memo lists it once;
    a listed name answers for its blob, and a name the listing lacks is looked up: a blob
    stored since (a remote pull) is found, one never stored is missing."""
    first, later = 30, 2  # past the threshold of a one-block directory (4096 // 200)
    digests = _blobs_in_one_shard(store, first + later + 1)
    entries = _blob_entries(store, digests[: first + later])
    # The blobs after `first` (and the absent one) are stored only after the listing.
    for digest in digests[first:]:
        layout.object_path(store.root, digest).unlink()
    present = PresentObjects()
    with store.in_use():
        for manifest in entries[:first]:
            assert store.get_action("run", manifest.key, present) == manifest
        assert present.threshold["5a"] < first
        assert set(present.listed["5a"]) == {digest[2:] for digest in digests[:first]}
        for digest in digests[first : first + later]:
            store.put_bytes(_data_of(digest))
        for manifest in entries[first:]:
            assert store.get_action("run", manifest.key, present) == manifest
        absent = ActionManifest.create(
            "run", "f" * 32, {"out": OutputRef(digest=digests[-1], type="blob")}
        )
        assert store.missing_outputs(absent, present=present) == [digests[-1]]


def test_a_presence_memo_does_not_list_a_shard_asked_about_rarely(store: CacheStore) -> None:
    entries = _blob_entries(store, _blobs_in_one_shard(store, LIST_SHARD_AFTER - 1))
    present = PresentObjects()
    with store.in_use():
        for manifest in entries:
            assert store.get_action("run", manifest.key, present) == manifest
    assert present.listed == {}


def test_a_listed_shard_entry_that_is_not_a_file_is_not_a_blob(store: CacheStore) -> None:
    digests = _blobs_in_one_shard(store, 31)
    entries = _blob_entries(store, digests)
    planted = layout.object_path(store.root, digests[-1])
    planted.unlink()
    planted.mkdir()
    present = PresentObjects()
    with store.in_use():
        for manifest in entries[:-1]:
            assert store.get_action("run", manifest.key, present) == manifest
        assert "5a" in present.listed
        assert store.get_action("run", entries[-1].key, present) is None


def _data_of(digest: str) -> bytes:
    seed = 0
    while digest_bytes(data := f"blob {seed}".encode()) != digest:
        seed += 1
    return data


def test_a_blob_that_is_a_fifo_reads_as_corrupt_instead_of_blocking(store: CacheStore) -> None:
    digest = store.put_bytes(b"some bytes")
    path = layout.object_path(store.root, digest)
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(CacheError) as caught:
        store.get_bytes(digest)
    assert caught.value.code == "cache_corrupt_object"
    assert not path.exists()


def test_a_blob_past_one_read_is_read_whole(store: CacheStore) -> None:
    data = bytes(range(256)) * 2000
    assert store.get_bytes(store.put_bytes(data)) == data
