"""du and ls helpers: counts and bytes per area, and the action listing."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from agevalx.cache import ActionManifest, CacheStore, OutputRef, disk_usage, layout, list_actions
from agevalx.hashing import digest_json

pytestmark = pytest.mark.unit


def test_disk_usage_counts_each_area(store: CacheStore, tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "f.txt").write_bytes(b"x" * 100)
    tree = store.put_tree(tmp_path / "tree")
    blob = store.put_bytes(b"y" * 50)
    outputs = {"t": OutputRef(digest=tree.digest, type="tree")}
    store.put_action(ActionManifest.create("run", digest_json("a"), outputs))
    outputs = {"b": OutputRef(digest=blob, type="blob")}
    store.put_action(ActionManifest.create("evaluate", digest_json("b"), outputs))
    store.set_ref("keep", [blob])

    usage = disk_usage(store)

    assert (usage.objects.files, usage.objects.bytes) == (2, 150)
    assert (usage.trees.files, usage.trees.bytes) == (1, len(tree.canonical_bytes()))
    assert sorted(usage.actions) == ["evaluate", "run"]
    assert usage.actions["run"].files == 1 and usage.actions["run"].bytes > 0
    assert usage.refs == 1 and usage.tmp.files == 0
    assert usage.total_bytes >= 150 + usage.trees.bytes


def test_list_actions_reports_sizes_and_completeness(store: CacheStore) -> None:
    blob = store.put_bytes(b"z" * 70)
    older = ActionManifest(
        kind="run",
        key=digest_json("older"),
        created=datetime(2024, 1, 1, tzinfo=UTC),
        outputs={"b": OutputRef(digest=blob, type="blob")},
    )
    store.put_action(older)
    newer = ActionManifest.create("run", digest_json("newer"), older.outputs)
    store.put_action(newer)

    listing = list_actions(store)

    assert [info.key for info in listing] == [newer.key, older.key]
    assert all(info.output_bytes == 70 and info.complete for info in listing)
    layout.object_path(store.root, blob).unlink()
    assert not any(info.complete for info in list_actions(store, "run"))
    assert list_actions(store, "evaluate") == []
