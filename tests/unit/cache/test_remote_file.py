"""A file:// remote: push and pull between two caches, create-only writes, untrusted reads."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from agevalx.cache import ActionManifest, CacheError, CacheStore, OutputRef, layout
from agevalx.cache.backend import ActionId, ObjectId
from agevalx.cache.remote import RemoteError, RemoteStore
from agevalx.cache.transfer import all_entries, pull, push
from agevalx.hashing import digest_bytes

pytestmark = pytest.mark.unit


def _files(root: Path) -> dict[str, bytes]:
    """Every file of the objects, trees and actions areas, by relative path."""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for area in ("objects", "trees", "actions")
        for path in sorted((root / area).rglob("*"))
        if path.is_file()
    }


def _remote_object(remote: RemoteStore, obj: ObjectId) -> Path:
    area = "objects" if obj.type == "blob" else "trees"
    return Path(remote.base) / area / "xxh3-128" / obj.digest[:2] / obj.digest[2:]


def test_b_pulls_exactly_what_a_pushed(store, make_action, file_remote, tmp_path):
    made = [make_action(store, f"attempt {n}") for n in range(3)]
    pushed = push(store, file_remote, all_entries(store))
    assert (pushed.entries_copied, pushed.skipped) == (3, [])
    with CacheStore(tmp_path / "machine-b") as other:
        pulled = pull(other, file_remote, all_entries(file_remote))
        assert (pulled.entries_copied, pulled.objects_copied) == (3, pushed.objects_copied)
        assert _files(other.root) == _files(store.root)
        for manifest in made:
            assert other.get_action(manifest.kind, manifest.key) == manifest


def test_only_what_is_missing_moves(store, make_action, file_remote):
    make_action(store, "first")
    push(store, file_remote, all_entries(store))
    make_action(store, "second", {"a.txt": "new", "sub/b.txt": "shared"})
    again = push(store, file_remote, all_entries(store))
    assert again.entries_present == 1
    assert again.entries_copied == 1
    assert again.objects_copied == 3  # result blob, tree, a.txt; sub/b.txt was there


def test_the_remote_layout_mirrors_the_local_one(store, make_action, file_remote):
    manifest = make_action(store, "layout")
    push(store, file_remote, all_entries(store))
    base = Path(file_remote.base)
    assert (base / "VERSION").read_text() == "ageval-remote 1\n"
    blob = manifest.outputs["result"].digest
    assert (base / "objects/xxh3-128" / blob[:2] / blob[2:]).read_bytes() == store.get_bytes(blob)
    entry = (base / "actions/run" / manifest.key[:2] / manifest.key[2:]).read_bytes()
    assert entry == b'{"entry":' + manifest.canonical_bytes() + b',"schema":1,"signature":null}'


def test_writing_an_existing_object_succeeds_without_touching_it(file_remote):
    obj = ObjectId("blob", digest_bytes(b"data"))
    assert file_remote.write_object(obj, b"data") is True
    path = _remote_object(file_remote, obj)
    before = path.stat()
    assert file_remote.write_object(obj, b"data") is False
    assert path.stat().st_ino == before.st_ino
    assert list((Path(file_remote.base) / "tmp").iterdir()) == []


def test_corrupt_bytes_are_never_uploaded(file_remote):
    with pytest.raises(CacheError) as caught:
        file_remote.write_object(ObjectId("blob", digest_bytes(b"data")), b"other")
    assert caught.value.code == "cache_corrupt_object"


def test_the_first_entry_for_a_key_wins(store, make_action, file_remote, tmp_path):
    manifest = make_action(store, "raced")
    push(store, file_remote, [ActionId.of(manifest)])
    with CacheStore(tmp_path / "machine-b") as other:
        rival = make_action(other, "raced")  # same key, other content and time
        assert rival.key == manifest.key and rival != manifest
        report = push(other, file_remote, [ActionId.of(rival)])
    assert report.ok and report.entries_present == 1
    assert file_remote.read_entry(ActionId.of(manifest)) == manifest


def test_an_unusable_entry_in_the_way_is_a_conflict(store, make_action, file_remote):
    manifest = make_action(store, "blocked")
    path = Path(file_remote.base) / "actions/run" / manifest.key[:2] / manifest.key[2:]
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not json")
    report = push(store, file_remote, [ActionId.of(manifest)])
    assert [s.action for s in report.skipped] == [f"run/{manifest.key}"]
    assert "unusable entry" in report.skipped[0].reason
    assert file_remote.stats.write_errors == 1
    assert path.read_bytes() == b"not json"


def test_concurrent_pushers_of_one_key_leave_one_intact_entry(tmp_path, make_action):
    stores = [CacheStore(tmp_path / f"machine-{n}") for n in range(4)]
    made = [make_action(s, "same node", {"f.txt": f"machine {n}"}) for n, s in enumerate(stores)]
    remotes = [RemoteStore(f"file://{tmp_path}/remote") for _ in stores]
    barrier = threading.Barrier(len(stores))

    def race(index: int) -> None:
        barrier.wait()
        push(stores[index], remotes[index], all_entries(stores[index]))

    threads = [threading.Thread(target=race, args=(n,)) for n in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winner = remotes[0].read_entry(ActionId.of(made[0]))
    assert winner in made
    with CacheStore(tmp_path / "reader") as reader:
        assert pull(reader, remotes[0], all_entries(remotes[0])).ok
        assert reader.get_action("run", made[0].key) == winner
    for item in (*stores, *remotes):
        item.close()


def test_a_corrupt_remote_blob_is_a_skipped_root(store, make_action, file_remote, tmp_path):
    good = make_action(store, "good")
    bad = make_action(store, "bad", {"a.txt": "only here"})
    push(store, file_remote, all_entries(store))
    tree = store.get_tree(bad.outputs["workspace"].digest)
    only_here = next(e.digest for e in tree.files() if e.path == "a.txt")
    _remote_object(file_remote, ObjectId("blob", only_here or "")).write_bytes(b"flipped")
    with CacheStore(tmp_path / "machine-b") as other:
        report = pull(other, file_remote, all_entries(file_remote))
        assert [s.action for s in report.skipped] == [f"run/{bad.key}"]
        assert "does not match its digest" in report.skipped[0].reason
        assert other.get_action("run", good.key) == good
        assert other.get_action("run", bad.key) is None
        assert not other.has_tree(tree.digest)


def test_a_missing_remote_object_is_a_skipped_root(store, make_action, file_remote, tmp_path):
    manifest = make_action(store, "lost")
    push(store, file_remote, all_entries(store))
    _remote_object(file_remote, ObjectId("blob", manifest.outputs["result"].digest)).unlink()
    with CacheStore(tmp_path / "machine-b") as other:
        report = pull(other, file_remote, all_entries(file_remote))
        assert "is not on remote" in report.skipped[0].reason
        assert other.get_action("run", manifest.key) is None


def test_a_non_canonical_tree_is_refused(store, file_remote):
    data = b'{"schema":1,"entries":[]}'
    obj = ObjectId("tree", digest_bytes(data))
    path = _remote_object(file_remote, obj)
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    with pytest.raises(CacheError) as caught:
        store.write_object(obj, file_remote.read_object(obj))
    assert caught.value.code == "cache_invalid_tree"


def test_stray_names_on_the_remote_are_ignored(store, make_action, file_remote):
    manifest = make_action(store, "named")
    push(store, file_remote, all_entries(store))
    base = Path(file_remote.base) / "actions"
    for stray in ("run/zz/" + "0" * 30, "Bad-Kind/00/" + "0" * 30, "run/00/short", "run/x"):
        (base / stray).parent.mkdir(parents=True, exist_ok=True)
        (base / stray).write_bytes(b"{}")
    assert list(file_remote.entries()) == [ActionId.of(manifest)]


def test_names_are_validated_before_a_path_is_built(file_remote):
    with pytest.raises(CacheError) as caught:
        file_remote.read_entry(ActionId("../../etc", "0" * 32))
    assert caught.value.code == "cache_invalid_name"
    with pytest.raises(CacheError):
        file_remote.read_object(ObjectId("blob", "../" + "0" * 29))


def test_a_read_only_remote_refuses_uploads(store, make_action, tmp_path):
    make_action(store, "kept local")
    with RemoteStore(f"file://{tmp_path}/remote", read_only=True) as remote:
        with pytest.raises(RemoteError) as caught:
            push(store, remote, all_entries(store))
        assert caught.value.code == "remote_read_only"
        with pytest.raises(RemoteError):
            remote.write_object(ObjectId("blob", digest_bytes(b"x")), b"x")
    assert not (tmp_path / "remote").exists()


def test_a_remote_of_another_layout_is_refused(store, make_action, tmp_path):
    (tmp_path / "remote").mkdir()
    (tmp_path / "remote" / "VERSION").write_text("ageval-remote 99\n")
    manifest = make_action(store, "versioned")
    with RemoteStore(f"file://{tmp_path}/remote") as remote:
        report = push(store, remote, all_entries(store))
        assert not report.ok and not remote.available
        assert remote.stats.warnings[0].code == "remote_unavailable"
        assert "ageval-remote 99" in remote.stats.warnings[0].message
    assert not (tmp_path / "remote" / "actions").exists()
    assert manifest == store.get_action("run", manifest.key)


def test_an_entry_is_never_written_before_its_objects(store, file_remote):
    blob = digest_bytes(b"never stored")
    manifest = ActionManifest.create("run", "1" * 32, {"r": OutputRef(digest=blob, type="blob")})
    report = push(store, file_remote, [ActionId.of(manifest)])
    assert report.absent == 1  # the local cache refuses such an entry; nothing to push
    with pytest.raises(CacheError) as caught:
        store.write_entry(manifest)
    assert caught.value.code == "cache_missing_object"


def test_a_dead_file_remote_fails_transfers_without_raising(store, make_action, tmp_path):
    (tmp_path / "not-a-dir").write_text("")
    make_action(store, "offline")
    with RemoteStore(f"file://{tmp_path}/not-a-dir/remote") as remote:
        report = push(store, remote, all_entries(store))
        assert not report.ok
        assert [w.code for w in remote.stats.warnings] == ["remote_unavailable"]
        assert remote.stats.write_errors == 1
        assert list(layout.iter_action_kinds(store.root)) == ["run"]
        assert not os.path.isdir(tmp_path / "not-a-dir")
