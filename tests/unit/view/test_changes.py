"""File changes between two snapshots: added, removed, modified, with text diffs."""

from __future__ import annotations

from pathlib import Path

import pytest

from agevalx.cache.store import CacheStore
from agevalx.view.changes import tree_changes
from tests.unit.view.builders import snapshot

pytestmark = pytest.mark.unit


def test_changed_files_are_listed_with_a_diff_of_their_text(tmp_path: Path) -> None:
    with CacheStore(tmp_path / "cache") as store:
        before = store.get_tree(snapshot(store, tmp_path, {"a.txt": "one\ntwo\n", "old": "x"}))
        after = store.get_tree(
            snapshot(store, tmp_path, {"a.txt": "one\nthree\n", "dir/new.txt": "hi\n"})
        )

        changes = tree_changes(store, before, after)

    assert [(c.path, c.change) for c in changes] == [
        ("a.txt", "modified"),
        ("dir/new.txt", "added"),
        ("old", "removed"),
    ]
    assert "-two" in (changes[0].diff or []) and "+three" in (changes[0].diff or [])
    assert "+hi" in (changes[1].diff or [])


def test_a_binary_file_is_named_but_not_diffed(tmp_path: Path) -> None:
    with CacheStore(tmp_path / "cache") as store:
        after = store.get_tree(snapshot(store, tmp_path, {"blob.bin": b"\x00\xff\x00"}))

        (change,) = tree_changes(store, None, after)

    assert change.diff is None and change.note is not None and "binary" in change.note


def test_unchanged_trees_have_no_changes(tmp_path: Path) -> None:
    with CacheStore(tmp_path / "cache") as store:
        tree = store.get_tree(snapshot(store, tmp_path, {"a/b.txt": "same"}))

        assert tree_changes(store, tree, tree) == []
