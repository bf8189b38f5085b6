"""closure(): every object a set of entries reaches, and the roots it cannot follow."""

from __future__ import annotations

import os

import pytest

from agevalx.cache import CacheStore, layout
from agevalx.cache.backend import ActionId, ObjectId
from agevalx.cache.closure import closure

pytestmark = pytest.mark.unit


def test_closure_holds_outputs_and_the_blobs_of_their_trees(store: CacheStore, make_action):
    manifest = make_action(store, "one", {"a.txt": "a", "d/b.txt": "b"})
    found = closure(store, [ActionId.of(manifest)])
    tree = store.get_tree(manifest.outputs["workspace"].digest)
    expected = {
        ObjectId("blob", manifest.outputs["result"].digest),
        ObjectId("tree", tree.digest),
        *(ObjectId("blob", entry.digest or "") for entry in tree.files()),
    }
    assert found.objects == expected
    assert found.reach[ActionId.of(manifest)] == expected
    assert found.entries == {ActionId.of(manifest): manifest}
    assert found.trees == {tree.digest: tree}


def test_objects_shared_by_two_entries_appear_once(store: CacheStore, make_action):
    first = make_action(store, "first", {"same.txt": "shared bytes"})
    second = make_action(store, "second", {"same.txt": "shared bytes"})
    found = closure(store, [ActionId.of(first), ActionId.of(second)])
    assert len(found.objects) == 4  # two result blobs, one tree, one file blob


def test_absent_roots_are_misses_not_errors(store: CacheStore):
    found = closure(store, [ActionId("run", "0" * 32)])
    assert found.absent == {ActionId("run", "0" * 32)}
    assert found.objects == set()


def test_an_entry_naming_a_corrupt_tree_is_unusable(store: CacheStore, make_action):
    good = make_action(store, "good")
    bad = make_action(store, "bad", {"x.txt": "x"})
    path = layout.tree_path(store.root, bad.outputs["workspace"].digest)
    os.chmod(path, 0o644)
    path.write_bytes(b'{"entries":[],"schema":1}')
    found = closure(store, [ActionId.of(good), ActionId.of(bad)])
    assert set(found.entries) == {ActionId.of(good)}
    assert "does not match its digest" in found.unusable[ActionId.of(bad)]
