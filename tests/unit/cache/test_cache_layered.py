"""LayeredStore: read-through on a local miss, write-through on every stored entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from agevalx.cache import CacheStore
from agevalx.cache.backend import ActionId, ObjectId
from agevalx.cache.layered import LayeredStore
from agevalx.cache.remote import RemoteStore
from agevalx.cache.transfer import all_entries, push

pytestmark = pytest.mark.unit


def _layered(tmp_path: Path, name: str, **remote: object) -> LayeredStore:
    return LayeredStore(tmp_path / name, RemoteStore(f"file://{tmp_path}/remote", **remote))  # type: ignore[arg-type]


def test_a_local_miss_is_served_by_the_remote_and_kept_locally(store, make_action, tmp_path):
    manifest = make_action(store, "remote hit")
    with RemoteStore(f"file://{tmp_path}/remote") as remote:
        push(store, remote, all_entries(store))
    with _layered(tmp_path, "machine-b") as layered:
        assert layered.get_action("run", manifest.key) == manifest
        assert layered.get_action("run", manifest.key) == manifest  # now a local hit
        assert CacheStore.get_action(layered, "run", manifest.key) == manifest
        stats = layered.remote_stats
        assert (stats.hits, stats.misses, stats.uploads) == (1, 0, 0)
        assert stats.warnings == []


def test_a_miss_on_both_sides_is_a_plain_miss(tmp_path):
    with _layered(tmp_path, "empty") as layered:
        assert layered.get_action("run", "0" * 32) is None
        assert (layered.remote_stats.misses, layered.remote_stats.warnings) == (1, [])


def test_every_stored_entry_is_uploaded_at_once(tmp_path, make_action):
    with _layered(tmp_path, "machine-a") as layered:
        manifest = make_action(layered, "written through")
        assert layered.remote_stats.uploads == 1
        assert layered.remote.read_entry(ActionId.of(manifest)) == manifest
        assert layered.remote_stats.objects_uploaded == 4
    with _layered(tmp_path, "machine-b") as other:
        assert other.get_action("run", manifest.key) == manifest


def test_copying_from_the_remote_does_not_upload_it_again(store, make_action, tmp_path):
    make_action(store, "pulled")
    with RemoteStore(f"file://{tmp_path}/remote") as remote:
        push(store, remote, all_entries(store))
    with _layered(tmp_path, "machine-b") as layered:
        [action] = all_entries(layered.remote)
        layered.get_action(action.kind, action.key)
        assert layered.remote_stats.uploads == 0


def test_a_read_only_remote_is_never_written(tmp_path, make_action):
    with _layered(tmp_path, "machine-a", read_only=True) as layered:
        manifest = make_action(layered, "local only")
        assert layered.get_action("run", manifest.key) == manifest
        assert (layered.remote_stats.uploads, layered.remote_stats.write_errors) == (0, 0)
    assert not (tmp_path / "remote").exists()


def test_a_corrupt_remote_object_is_a_miss_and_a_warning(store, make_action, tmp_path):
    manifest = make_action(store, "corrupted")
    with RemoteStore(f"file://{tmp_path}/remote") as remote:
        push(store, remote, all_entries(store))
        blob = manifest.outputs["result"].digest
        path = Path(remote.base) / "objects/xxh3-128" / blob[:2] / blob[2:]
        path.write_bytes(b"bit rot")
    with _layered(tmp_path, "machine-b") as layered:
        assert layered.get_action("run", manifest.key) is None
        stats = layered.remote_stats
        assert (stats.hits, stats.misses) == (0, 1)
        [warning] = stats.warnings
        assert warning.code == "remote_entry_unusable"
        assert f"run/{manifest.key}" in warning.message
        assert "does not match its digest" in warning.message
        assert not layered.has_blob(blob)


def test_an_unusable_remote_entry_is_recomputed_and_the_result_kept_locally(
    store, make_action, tmp_path
):
    manifest = make_action(store, "signed elsewhere")
    with RemoteStore(f"file://{tmp_path}/remote", signing_key=b"ci") as remote:
        push(store, remote, all_entries(store))
    with _layered(tmp_path, "machine-b", signing_key=b"not ci") as layered:
        assert layered.get_action("run", manifest.key) is None
        assert layered.remote_stats.warnings[0].code == "remote_entry_bad_signature"
        recomputed = make_action(layered, "signed elsewhere")
        assert layered.get_action("run", manifest.key) == recomputed
        [warning] = [w for w in layered.remote_stats.warnings if w.code == "remote_write_failed"]
        assert "unusable entry" in warning.message  # create-only: the remote keeps its entry
        assert layered.remote_stats.write_errors == 1


def test_a_dead_remote_leaves_the_local_cache_working(tmp_path, make_action):
    (tmp_path / "not-a-dir").write_text("")
    remote = RemoteStore(f"file://{tmp_path}/not-a-dir/remote")
    with LayeredStore(tmp_path / "machine-a", remote) as layered:
        assert layered.get_action("run", "0" * 32) is None
        first = make_action(layered, "offline 1")
        second = make_action(layered, "offline 2")
        assert layered.get_action("run", first.key) == first
        assert layered.get_action("run", second.key) == second
        stats = layered.remote_stats
        assert not layered.remote.available
        assert [w.code for w in stats.warnings] == ["remote_unavailable"]
        assert (stats.misses, stats.write_errors, stats.uploads) == (1, 2, 0)
        assert "2 write errors" in stats.summary()


def test_layered_objects_stay_on_the_local_side_of_the_seam(tmp_path, make_action):
    with _layered(tmp_path, "machine-a") as layered:
        manifest = make_action(layered, "seam")
        tree = ObjectId("tree", manifest.outputs["workspace"].digest)
        assert layered.missing_objects([tree]) == set()
        assert layered.read_object(tree) == layered.remote.read_object(tree)


def test_several_local_misses_are_pulled_in_one_transfer(store, make_action, tmp_path):
    first, second = make_action(store, "one"), make_action(store, "two")
    with RemoteStore(f"file://{tmp_path}/remote") as remote:
        push(store, remote, all_entries(store))
    absent = ActionId("run", "0" * 32)
    with _layered(tmp_path, "machine-b") as layered:
        found = layered.get_actions([ActionId.of(first), ActionId.of(second), absent])
        assert found == {ActionId.of(first): first, ActionId.of(second): second, absent: None}
        stats = layered.remote_stats
        assert (stats.hits, stats.misses) == (2, 1)
        assert layered.remote.requests > 0
        pulled = layered.remote.requests
        assert layered.get_actions([ActionId.of(first)]) == {ActionId.of(first): first}
        assert layered.remote.requests == pulled  # a local hit asks the remote nothing
