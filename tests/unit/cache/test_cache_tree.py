"""Tree hashing, storing and restoring: format pins, symlinks, globs, hostile manifests."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from agevalx.cache import CacheError, CacheStore, TreeEntry, TreeManifest, hash_tree, layout
from agevalx.cache.globs import PathFilter, glob_regex
from agevalx.hashing import digest_bytes

pytestmark = pytest.mark.unit

GOLDEN_MANIFEST = (
    '{"entries":['
    '{"digest":"6bba86c7e069f56d5a10b435f1c8e49c","mode":420,"path":"a.txt","size":6,'
    '"type":"file"},'
    '{"mode":493,"path":"bin","size":0,"type":"dir"},'
    '{"digest":"38d6a0c73ce3aa28b9b26f0f4702a844","mode":493,"path":"bin/run.sh","size":18,'
    '"type":"file"},'
    '{"mode":493,"path":"empty","size":0,"type":"dir"},'
    '{"mode":511,"path":"link","size":5,"target":"a.txt","type":"symlink"},'
    '{"mode":511,"path":"outside","size":11,"target":"/etc/passwd","type":"symlink"}'
    '],"schema":1}'
)
GOLDEN_DIGEST = "6c1e3c94514178cff280909dc9dfb37e"


def test_tree_manifest_format_and_digest_are_pinned(source_tree: Path) -> None:
    manifest = hash_tree(source_tree)
    assert manifest.canonical_bytes().decode() == GOLDEN_MANIFEST
    assert manifest.digest == GOLDEN_DIGEST


def test_manifest_built_in_memory_has_the_pinned_digest() -> None:
    manifest = TreeManifest(
        entries=(
            TreeEntry(path="d", type="dir", size=0, mode=0o755),
            TreeEntry(path="d/f", type="file", digest="a" * 32, size=1, mode=0o644),
        )
    )
    expected = (
        '{"entries":[{"mode":493,"path":"d","size":0,"type":"dir"},'
        '{"digest":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","mode":420,"path":"d/f","size":1,'
        '"type":"file"}],"schema":1}'
    )
    assert manifest.canonical_bytes().decode() == expected
    assert manifest.digest == "b78ad3e62256c978a05fc2d320a274e5"


def test_hash_tree_stores_nothing(source_tree: Path, store: CacheStore) -> None:
    hash_tree(source_tree)
    assert list(layout.iter_sharded(layout.object_dir(store.root))) == []


def test_symlinks_are_recorded_and_never_followed(tmp_path: Path) -> None:
    secret_dir = tmp_path / "secret"
    secret_dir.mkdir()
    (secret_dir / "key").write_text("do not read")
    root = tmp_path / "tree"
    root.mkdir()
    os.symlink(secret_dir, root / "dir-link")
    os.symlink(secret_dir / "key", root / "file-link")
    os.symlink("missing", root / "dangling")
    entries = {entry.path: entry for entry in hash_tree(root).entries}
    assert sorted(entries) == ["dangling", "dir-link", "file-link"]
    assert all(entry.type == "symlink" and entry.digest is None for entry in entries.values())
    assert entries["file-link"].target == str(secret_dir / "key")


def test_special_files_are_skipped(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "plain").write_text("x")
    assert [entry.path for entry in hash_tree(tmp_path).entries] == ["plain"]


def test_put_tree_then_restore_reproduces_the_tree(
    source_tree: Path, store: CacheStore, tmp_path: Path
) -> None:
    stored = store.put_tree(source_tree)
    assert stored.digest == GOLDEN_DIGEST
    restored = tmp_path / "restored"
    store.restore_tree(stored.digest, restored)
    assert hash_tree(restored).digest == GOLDEN_DIGEST
    assert os.readlink(restored / "outside") == "/etc/passwd"
    assert os.stat(restored / "bin" / "run.sh").st_mode & 0o777 == 0o755
    assert (restored / "empty").is_dir()


def test_restore_refuses_a_non_empty_target(
    source_tree: Path, store: CacheStore, tmp_path: Path
) -> None:
    digest = store.put_tree(source_tree).digest
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "file").write_text("mine")
    with pytest.raises(CacheError) as caught:
        store.restore_tree(digest, tmp_path / "busy")
    assert caught.value.code == "cache_restore_target_not_empty"


def _plant_tree(store: CacheStore, entries: list[dict[str, object]]) -> str:
    """Write a manifest straight into `trees/`, as a hostile remote could."""
    data = json.dumps({"schema": 1, "entries": entries}).encode()
    digest = digest_bytes(data)
    path = layout.tree_path(store.root, digest)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return digest


@pytest.mark.parametrize(
    "paths",
    [
        [("/tmp/escaped", "file")],
        [("../escaped", "file")],
        [("d", "dir"), ("d/../../escaped", "file")],
        [("./escaped", "file")],
        [("link", "symlink"), ("link/escaped", "file")],
        [("a//escaped", "file")],
    ],
    ids=["absolute", "dotdot", "nested-dotdot", "dot", "below-symlink", "empty-part"],
)
def test_restore_refuses_paths_that_escape_the_target(
    store: CacheStore, tmp_path: Path, paths: list[tuple[str, str]]
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    blob = store.put_bytes(b"pwned")
    entries: list[dict[str, object]] = []
    for path, kind in paths:
        entry: dict[str, object] = {"path": path, "type": kind, "size": 0, "mode": 0o755}
        if kind == "file":
            entry.update(digest=blob, size=5, mode=0o644)
        if kind == "symlink":
            entry.update(target=str(outside), size=len(str(outside)), mode=0o777)
        entries.append(entry)
    digest = _plant_tree(store, entries)
    with pytest.raises(CacheError) as caught:
        store.restore_tree(digest, tmp_path / "target" / "sub")
    assert caught.value.code in ("cache_invalid_tree", "cache_unsafe_path")
    assert list(outside.iterdir()) == []
    assert not (tmp_path / "escaped").exists()
    assert not (tmp_path / "target" / "escaped").exists()


def test_unsorted_or_duplicated_manifest_is_invalid(store: CacheStore, tmp_path: Path) -> None:
    entry = {"path": "d", "type": "dir", "size": 0, "mode": 0o755}
    digest = _plant_tree(store, [entry, entry])
    with pytest.raises(CacheError) as caught:
        store.restore_tree(digest, tmp_path / "target")
    assert caught.value.code == "cache_invalid_tree"


def _make_files(root: Path, paths: list[str]) -> None:
    for path in paths:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(path)


def test_include_and_exclude_globs_select_files(tmp_path: Path) -> None:
    _make_files(
        tmp_path,
        [
            "src/a.py",
            "src/b.txt",
            "src/pkg/c.py",
            "src/pkg/gen/d.py",
            "tests/t.py",
            "tests/data/x.bin",
            "build/out.o",
            ".git/HEAD",
        ],
    )
    manifest = hash_tree(tmp_path, include=["src/**/*.py", "tests"], exclude=["**/gen", "**/*.bin"])
    files = [entry.path for entry in manifest.files()]
    assert files == ["src/a.py", "src/pkg/c.py", "tests/t.py"]
    dirs = [entry.path for entry in manifest.entries if entry.type == "dir"]
    assert dirs == ["src", "src/pkg", "tests", "tests/data"]


def test_globs_are_anchored_at_the_tree_root(tmp_path: Path) -> None:
    _make_files(tmp_path, ["top.bin", "deep/low.bin"])
    manifest = hash_tree(tmp_path, exclude=["*.bin"])
    assert [entry.path for entry in manifest.files()] == ["deep/low.bin"]


def test_exclude_prunes_whole_directories(tmp_path: Path) -> None:
    _make_files(tmp_path, ["keep.txt", "node_modules/a/b.js", ".git/objects/x"])
    manifest = hash_tree(tmp_path, exclude=["node_modules", ".git/"])
    assert [entry.path for entry in manifest.entries] == ["keep.txt"]


def test_empty_include_list_keeps_nothing(tmp_path: Path) -> None:
    _make_files(tmp_path, ["a.txt"])
    assert hash_tree(tmp_path, include=[]).entries == ()


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.py", "a.py", True),
        ("*.py", "pkg/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "pkg/sub/a.py", True),
        ("**", "any/thing", True),
        ("src/**", "src/a/b", True),
        ("src/**", "srcx/a", False),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("a/**/b", "a/x/yb", False),
        ("?.txt", "a.txt", True),
        ("?.txt", "ab.txt", False),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "a.txt", False),
        ("[!ab].txt", "c.txt", True),
        ("a+b(c).txt", "a+b(c).txt", True),
        ("*", "a/b", False),
    ],
)
def test_glob_semantics(pattern: str, path: str, matches: bool) -> None:
    assert (re.fullmatch(glob_regex(pattern), path) is not None) is matches


def test_include_applies_to_everything_below_a_matching_directory() -> None:
    path_filter = PathFilter(include=["docs"])
    assert path_filter.includes("docs/guide/intro.md")
    assert not path_filter.includes("docsx/a.md")


@pytest.mark.parametrize("pattern", ["/etc/*", "../x", "", "a/./b"])
def test_unsafe_globs_raise_a_coded_error(tmp_path: Path, pattern: str) -> None:
    with pytest.raises(CacheError) as caught:
        hash_tree(tmp_path, include=[pattern])
    assert caught.value.code == "cache_invalid_glob"


def test_hashing_a_missing_directory_raises_a_coded_error(tmp_path: Path) -> None:
    with pytest.raises(CacheError) as caught:
        hash_tree(tmp_path / "nope")
    assert caught.value.code == "cache_not_a_directory"


def test_restore_refuses_a_parent_that_resolves_elsewhere(tmp_path: Path) -> None:
    from agevalx.cache.store import _inside

    base = tmp_path / "base"
    base.mkdir()
    os.symlink(tmp_path, base / "hop")
    with pytest.raises(CacheError) as caught:
        _inside(str(base), "hop/escaped")
    assert caught.value.code == "cache_unsafe_path"
    assert _inside(str(base), "plain") == str(base / "plain")


def test_file_names_that_are_not_utf8_raise_a_coded_error(tmp_path: Path) -> None:
    fd = os.open(os.fsencode(tmp_path) + b"/bad-\xff.txt", os.O_CREAT | os.O_WRONLY, 0o644)
    os.close(fd)
    with pytest.raises(CacheError) as caught:
        hash_tree(tmp_path)
    assert caught.value.code == "cache_unencodable_path"
    from agevalx.cache.tree import tree_values

    with pytest.raises(CacheError) as caught:
        tree_values([tmp_path])
    assert caught.value.code == "cache_unencodable_path"


def test_tree_values_are_what_the_manifests_say(tmp_path: Path, store: CacheStore) -> None:
    """A plan keys trees by `tree_values`, not manifests: the same files, modes, links and
    directories, from one walk of many roots."""
    from agevalx.cache.tree import hash_trees, tree_values

    roots = [tmp_path / "a", tmp_path / "b"]
    for index, root in enumerate(roots):
        (root / "sub" / "empty").mkdir(parents=True)
        (root / "sub" / "f.txt").write_text(f"{index}\n")
        (root / "run.sh").write_text("#!/bin/sh\n")
        (root / "run.sh").chmod(0o755)
        (root / "link").symlink_to("sub/f.txt")
        os.mkfifo(root / "pipe")
    specials: list[list[str]] = [[], []]
    values = tree_values(
        roots, exclude=["**/empty"], stat_cache=store.stat_cache, specials=specials
    )
    for root, found in zip(roots, values, strict=True):
        manifest = hash_tree(root, exclude=["**/empty"])
        assert found == {
            e.path: "dir"
            if e.type == "dir"
            else f"symlink:{e.target}"
            if e.type == "symlink"
            else f"{e.digest}+x"
            if e.mode == 0o755
            else str(e.digest)
            for e in manifest.entries
        }
    assert values[0]["run.sh"].endswith("+x") and values[0]["sub"] == "dir"
    assert values[0]["sub/f.txt"] != values[1]["sub/f.txt"]
    assert specials == [["pipe"], ["pipe"]]
    assert [m.digest for m in hash_trees(roots)] == [hash_tree(root).digest for root in roots]
