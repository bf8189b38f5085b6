"""verify re-hashes everything, reports what is corrupt or broken, and can remove it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agevalx.cache import ActionManifest, CacheStore, OutputRef, layout, verify_cache
from agevalx.hashing import digest_json

pytestmark = pytest.mark.unit


def _key(name: str) -> str:
    return digest_json(["verify-test", name])


def _overwrite(path: Path, data: bytes) -> None:
    os.chmod(path, 0o644)
    path.write_bytes(data)


@pytest.fixture
def filled(store: CacheStore, tmp_path: Path) -> CacheStore:
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "f.txt").write_text("tree file")
    tree = store.put_tree(tmp_path / "tree")
    blob = store.put_bytes(b"blob content")
    outputs = {"t": OutputRef(digest=tree.digest, type="tree")}
    store.put_action(ActionManifest.create("run", _key("tree"), outputs))
    outputs = {"b": OutputRef(digest=blob, type="blob")}
    store.put_action(ActionManifest.create("evaluate", _key("blob"), outputs))
    return store


def test_clean_cache_verifies(filled: CacheStore) -> None:
    report = verify_cache(filled)
    assert report.ok
    assert (report.objects_checked, report.trees_checked, report.actions_checked) == (2, 1, 2)


def test_corruption_is_reported_and_kept_without_the_flag(filled: CacheStore) -> None:
    blob = filled.put_bytes(b"blob content")
    _overwrite(layout.object_path(filled.root, blob), b"blob CONTENT")
    garbled = layout.action_path(filled.root, "run", _key("tree"))
    garbled.write_bytes(garbled.read_bytes()[:20])

    report = verify_cache(filled)

    assert {(c.area, c.reason) for c in report.corrupt} == {
        ("objects", "digest_mismatch"),
        ("actions", "malformed_entry"),
    }
    assert [(b.kind, b.missing) for b in report.broken_actions] == [("evaluate", [blob])]
    assert report.removed == 0
    assert layout.object_path(filled.root, blob).exists() and garbled.exists()


def test_remove_corrupt_deletes_bad_files(filled: CacheStore) -> None:
    tree_file = next(layout.iter_sharded(layout.tree_dir(filled.root)))[1]
    _overwrite(tree_file, b"{}")
    stray = layout.object_dir(filled.root) / "00" / "stray"
    stray.parent.mkdir(exist_ok=True)
    stray.write_bytes(b"junk")

    report = verify_cache(filled, remove_corrupt=True)

    assert {(c.area, c.reason) for c in report.corrupt} == {
        ("trees", "digest_mismatch"),
        ("objects", "bad_name"),
    }
    assert report.removed == 2
    assert not tree_file.exists() and not stray.exists()
    assert [b.kind for b in report.broken_actions] == ["run"]
    assert filled.get_action("run", _key("tree")) is None


def test_tree_with_valid_digest_but_invalid_content_is_reported(filled: CacheStore) -> None:
    data = b'{"entries":[{"path":"../x","type":"dir","size":0,"mode":493}],"schema":1}'
    path = layout.tree_path(filled.root, filled.put_bytes(data))
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data)
    report = verify_cache(filled)
    assert [(c.area, c.reason) for c in report.corrupt] == [("trees", "invalid_manifest")]
