"""gc of a remote: its refs and newest complete entries survive, the rest is deleted."""

from __future__ import annotations

from pathlib import Path

import pytest

from agevalx.cache import CacheError, CacheStore
from agevalx.cache.backend import ActionId
from agevalx.cache.remote import RemoteError, RemoteStore, collect_remote_garbage
from agevalx.cache.transfer import all_entries, pull, push, push_refs

pytestmark = pytest.mark.unit


def test_refs_and_the_newest_entries_are_kept(store, make_action, file_remote, tmp_path):
    made = [
        make_action(store, f"entry {n}", {"own.txt": f"{n}", "common.txt": "c"}) for n in range(4)
    ]
    store.set_ref("pinned", [f"run/{made[0].key}"])
    push(store, file_remote, all_entries(store))
    assert push_refs(store, file_remote) == 1
    report = collect_remote_garbage(file_remote, keep_newest_per_kind=1)
    assert report.entries_kept == 2  # the ref'd one and the newest
    assert report.entries_removed == 2
    assert report.trees_removed == 2 and report.blobs_removed == 4  # 2 results, 2 own.txt
    assert report.bytes_freed > 0
    survivors = {made[0].key, made[3].key}
    assert {action.key for action in file_remote.entries()} == survivors
    with CacheStore(tmp_path / "machine-b") as other:
        assert pull(other, file_remote, all_entries(file_remote)).ok


def test_incomplete_and_untrusted_entries_are_garbage(store, make_action, tmp_path):
    url = f"file://{tmp_path}/remote"
    complete = make_action(store, "complete")
    unsigned = make_action(store, "unsigned")
    broken = make_action(store, "broken")
    with RemoteStore(url, signing_key=b"k") as signer:
        push(store, signer, [ActionId.of(complete), ActionId.of(broken)])
        blob = broken.outputs["result"].digest
        (Path(signer.base) / "objects/xxh3-128" / blob[:2] / blob[2:]).unlink()
    with RemoteStore(url) as keyless:
        push(store, keyless, [ActionId.of(unsigned)])
    with RemoteStore(url, signing_key=b"k") as remote:
        report = collect_remote_garbage(remote, keep_newest_per_kind=10)
        assert [action.key for action in remote.entries()] == [complete.key]
        assert report.entries_removed == 2


def test_a_malformed_remote_ref_stops_gc(store, make_action, file_remote):
    make_action(store, "kept")
    push(store, file_remote, all_entries(store))
    (Path(file_remote.base) / "refs").mkdir()
    (Path(file_remote.base) / "refs" / "broken").write_bytes(b"{")
    with pytest.raises(CacheError) as caught:
        collect_remote_garbage(file_remote, keep_newest_per_kind=0)
    assert caught.value.code == "cache_invalid_ref"
    assert len(list(file_remote.entries())) == 1


def test_gc_of_a_read_only_remote_is_refused(tmp_path):
    remote = RemoteStore(f"file://{tmp_path}/remote", read_only=True)
    with remote, pytest.raises(RemoteError) as caught:
        collect_remote_garbage(remote)
    assert caught.value.code == "remote_read_only"
