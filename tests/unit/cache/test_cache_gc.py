"""gc keeps what refs and the newest entries reach, and never leaves a dangling entry."""

from __future__ import annotations

import os
import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agevalx.cache import ActionManifest, CacheError, CacheStore, OutputRef, collect_garbage, layout
from agevalx.cache.scan import iter_action_files
from agevalx.hashing import digest_json

pytestmark = pytest.mark.unit

EPOCH = datetime(2025, 1, 1, tzinfo=UTC)


def _key(*parts: object) -> str:
    return digest_json(["gc-test", *parts])


def _action(
    store: CacheStore, kind: str, name: str, minutes: int, outputs: dict[str, OutputRef]
) -> ActionManifest:
    manifest = ActionManifest(
        kind=kind, key=_key(name), created=EPOCH + timedelta(minutes=minutes), outputs=outputs
    )
    store.put_action(manifest)
    return manifest


def _blob(store: CacheStore, data: bytes) -> OutputRef:
    return OutputRef(digest=store.put_bytes(data), type="blob")


def _assert_every_entry_is_complete(store: CacheStore) -> None:
    for action in iter_action_files(store):
        assert action.manifest is not None, action.path
        assert store.missing_outputs(action.manifest) == [], action.name


def test_gc_keeps_refs_and_newest_and_deletes_the_rest(store: CacheStore, tmp_path: Path) -> None:
    shared = _blob(store, b"shared by all")
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "f.txt").write_text("in a tree")
    tree = OutputRef(digest=store.put_tree(tmp_path / "tree").digest, type="tree")
    old = _action(store, "run", "old", 1, {"s": shared, "o": _blob(store, b"old only")})
    pinned = _action(store, "run", "pinned", 2, {"s": shared, "t": tree})
    newest = _action(store, "run", "newest", 3, {"s": shared, "n": _blob(store, b"newest")})
    other_kind = _action(store, "evaluate", "e", 0, {"e": _blob(store, b"eval")})
    store.set_ref("keep", [f"run/{pinned.key}"])

    report = collect_garbage(store, keep_newest_per_kind=1)

    assert store.get_action("run", old.key) is None
    assert not store.has_blob(old.outputs["o"].digest)
    for kept in (pinned, newest, other_kind):
        assert store.get_action(kept.kind, kept.key) == kept
    assert store.has_blob(shared.digest)
    assert (report.actions_removed, report.blobs_removed, report.trees_removed) == (1, 1, 0)
    assert report.bytes_freed > len(b"old only")
    assert (report.actions_kept, report.trees_kept) == (3, 1)
    _assert_every_entry_is_complete(store)


def test_gc_keeps_objects_a_ref_names_directly(store: CacheStore, tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "f.txt").write_text("kept through its tree")
    tree = store.put_tree(tmp_path / "tree")
    blob = store.put_bytes(b"kept by name")
    doomed = store.put_bytes(b"unreferenced")
    store.set_ref("pins", [tree.digest, blob])
    collect_garbage(store, keep_newest_per_kind=0)
    assert store.has_tree(tree.digest) and store.has_blob(blob)
    assert all(store.has_blob(entry.digest or "") for entry in tree.files())
    assert not store.has_blob(doomed)


def test_gc_deletes_entries_that_name_missing_objects(store: CacheStore) -> None:
    broken = _action(store, "run", "broken", 5, {"b": _blob(store, b"will vanish")})
    layout.object_path(store.root, broken.outputs["b"].digest).unlink()
    report = collect_garbage(store)
    assert report.actions_removed == 1
    assert not layout.action_path(store.root, "run", broken.key).exists()


def test_gc_deletes_malformed_entries_and_stray_files(store: CacheStore) -> None:
    good = _action(store, "run", "good", 1, {"g": _blob(store, b"good")})
    layout.action_path(store.root, "run", _key("garbled")).parent.mkdir(exist_ok=True)
    layout.action_path(store.root, "run", _key("garbled")).write_bytes(b'{"schema":1,')
    stray = layout.object_dir(store.root) / "zz" / "not-a-digest"
    stray.parent.mkdir()
    stray.write_bytes(b"junk")
    collect_garbage(store)
    assert [a.name for a in iter_action_files(store)] == [f"run/{good.key}"]
    assert not stray.exists()


def test_gc_removes_only_stale_staging_files(store: CacheStore) -> None:
    stale = store.tmp / "stage-crashed"
    fresh = store.tmp / "stage-in-flight"
    stale.write_bytes(b"left by a crash")
    fresh.write_bytes(b"being written")
    two_hours_ago = time.time() - 7200
    os.utime(stale, (two_hours_ago, two_hours_ago))
    report = collect_garbage(store)
    assert report.tmp_removed == 1
    assert not stale.exists() and fresh.exists()


def test_gc_refuses_to_run_with_a_malformed_ref(store: CacheStore) -> None:
    blob = store.put_bytes(b"maybe wanted")
    (store.root / "refs" / "broken").write_text("not json")
    with pytest.raises(CacheError) as caught:
        collect_garbage(store)
    assert caught.value.code == "cache_invalid_ref"
    assert store.has_blob(blob)


@pytest.mark.parametrize("seed", range(5))
def test_gc_never_leaves_an_entry_naming_a_missing_object(
    store: CacheStore, tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    blobs = [_blob(store, f"blob {seed} {n}".encode()) for n in range(12)]
    trees = []
    for n in range(3):
        source = tmp_path / f"tree{n}"
        source.mkdir()
        for index in rng.sample(range(8), 3):
            (source / f"f{index}").write_text(f"tree file {index}")
        trees.append(OutputRef(digest=store.put_tree(source).digest, type="tree"))
    actions = []
    for n in range(15):
        outputs = {f"o{i}": ref for i, ref in enumerate(rng.sample(blobs + trees, 2))}
        actions.append(_action(store, rng.choice(["run", "evaluate"]), f"{seed}-{n}", n, outputs))
    for ref in rng.sample(blobs, 2):
        layout.object_path(store.root, ref.digest).unlink()
    pinned = rng.sample(actions, 3)
    store.set_ref("pins", [f"{m.kind}/{m.key}" for m in pinned])
    complete_before = [m for m in actions if store.get_action(m.kind, m.key) is not None]

    collect_garbage(store, keep_newest_per_kind=rng.randint(0, 4))

    _assert_every_entry_is_complete(store)
    for manifest in pinned:
        assert (store.get_action(manifest.kind, manifest.key) is None) is (
            manifest not in complete_before
        )
