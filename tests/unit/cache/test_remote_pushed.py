"""A push that found its whole closure on the remote is remembered under the remote's
GENERATION token: the same push again asks the remote for that token only. Anything that
deletes through ageval replaces the token, and a remote made anew has another one."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from agevalx.cache import CacheStore
from agevalx.cache.backend import ObjectId
from agevalx.cache.errors import CacheError
from agevalx.cache.remote import RemoteStore, collect_remote_garbage
from agevalx.cache.transfer import all_entries, push

pytestmark = pytest.mark.unit


def _object_path(remote: RemoteStore, obj: ObjectId) -> Path:
    area = "objects" if obj.type == "blob" else "trees"
    return Path(remote.base) / area / "xxh3-128" / obj.digest[:2] / obj.digest[2:]


def test_the_same_push_again_asks_only_for_the_generation(store, make_action, file_remote):
    for n in range(3):
        make_action(store, f"attempt {n}")
    first = push(store, file_remote, all_entries(store))
    assert first.entries_copied == 3 and first.ok
    before = file_remote.requests
    again = push(store, file_remote, all_entries(store))
    assert file_remote.requests - before == 1  # GENERATION
    assert (again.entries_copied, again.objects_copied) == (0, 0)
    assert (again.entries_present, again.objects_present) == (3, first.objects_copied)


def test_a_push_of_more_asks_the_remote_and_uploads_what_is_new(store, make_action, file_remote):
    make_action(store, "first")
    push(store, file_remote, all_entries(store))
    make_action(store, "second", {"a.txt": "new", "sub/b.txt": "shared"})
    again = push(store, file_remote, all_entries(store))
    assert (again.entries_copied, again.entries_present, again.objects_copied) == (1, 1, 3)


def test_a_deletion_replaces_the_generation_and_the_next_push_restores(
    store, make_action, file_remote
):
    manifest = make_action(store, "kept")
    push(store, file_remote, all_entries(store))
    token = file_remote.generation()
    blob = ObjectId("blob", manifest.outputs["result"].digest)
    file_remote.delete([str(_object_path(file_remote, blob))])
    assert file_remote.generation() not in (None, token)
    again = push(store, file_remote, all_entries(store))
    assert again.objects_copied == 1 and _object_path(file_remote, blob).is_file()


def test_remote_gc_replaces_the_generation(store, make_action, file_remote):
    for n in range(3):
        make_action(store, f"attempt {n}")
    push(store, file_remote, all_entries(store))
    token = file_remote.generation()
    report = collect_remote_garbage(file_remote, keep_newest_per_kind=1)
    assert report.entries_removed == 2
    assert file_remote.generation() != token
    before = file_remote.requests
    again = push(store, file_remote, all_entries(store))
    assert again.entries_copied == 2 and file_remote.requests - before > 1


def test_a_remote_made_anew_at_the_same_url_is_asked_again(store, make_action, tmp_path):
    make_action(store, "one")
    url = f"file://{tmp_path}/remote"
    with RemoteStore(url) as remote:
        push(store, remote, all_entries(store))
    shutil.rmtree(tmp_path / "remote")
    with RemoteStore(url) as remote:
        again = push(store, remote, all_entries(store))
        assert again.entries_copied == 1 and again.objects_copied > 0


def test_another_signing_key_is_another_remote(store, make_action, tmp_path):
    make_action(store, "signed")
    url = f"file://{tmp_path}/remote"
    with RemoteStore(url) as remote:
        push(store, remote, all_entries(store))
    with RemoteStore(url, signing_key=b"k" * 32) as signed:
        before = signed.requests
        push(store, signed, all_entries(store))
        assert signed.requests - before > 1  # the unsigned entry was asked about


def test_a_generation_that_is_no_token_is_not_trusted(store, make_action, file_remote):
    make_action(store, "odd")
    push(store, file_remote, all_entries(store))
    (Path(file_remote.base) / "GENERATION").write_text("../../etc\n")
    before = file_remote.requests
    push(store, file_remote, all_entries(store))
    assert file_remote.generation() is None
    assert file_remote.requests - before > 1


def test_a_cache_without_its_stat_database_pushes_as_before(
    store: CacheStore, make_action, file_remote
):
    make_action(store, "plain")
    push(store, file_remote, all_entries(store))
    store.stat_cache.close()  # behaves as empty
    before = file_remote.requests
    again = push(store, file_remote, all_entries(store))
    assert again.entries_present == 1 and file_remote.requests - before > 1


def test_entries_are_uploaded_side_by_side_and_one_refused_is_skipped_alone(
    store, make_action, file_remote, monkeypatch
):
    # each upload waits until another is under way: one at a time, the barrier breaks
    for n in range(4):
        make_action(store, f"attempt {n}")
    together = threading.Barrier(2, timeout=10)
    refused = sorted(all_entries(store))[1]
    upload = RemoteStore.write_entry

    def write_entry(self: RemoteStore, manifest) -> None:
        together.wait()
        if (manifest.kind, manifest.key) == (refused.kind, refused.key):
            raise CacheError("remote_write_failed", "refused by the test")
        upload(self, manifest)

    monkeypatch.setattr(RemoteStore, "write_entry", write_entry)
    report = push(store, file_remote, all_entries(store))
    assert report.entries_copied == 3
    assert [(s.action, s.reason) for s in report.skipped] == [(str(refused), "refused by the test")]
    assert file_remote.read_entry(refused) is None
    assert all(file_remote.read_entry(a) for a in all_entries(store) if a != refused)
