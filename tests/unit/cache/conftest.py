"""Fixtures for the cache tests: a fresh store, a small source tree, entries, a file:// remote."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agevalx.cache import ActionManifest, CacheStore, OutputRef
from agevalx.cache.remote import RemoteStore
from agevalx.hashing import digest_json


@pytest.fixture
def store(tmp_path: Path) -> Iterator[CacheStore]:
    with CacheStore(tmp_path / "cache") as opened:
        yield opened


@pytest.fixture
def source_tree(tmp_path: Path) -> Path:
    """A tree with a plain file, an executable, an empty dir and two symlinks."""
    root = tmp_path / "src"
    (root / "bin").mkdir(parents=True)
    (root / "empty").mkdir()
    (root / "a.txt").write_bytes(b"hello\n")
    (root / "bin" / "run.sh").write_bytes(b"#!/bin/sh\necho hi\n")
    os.chmod(root / "bin" / "run.sh", 0o750)
    os.chmod(root / "a.txt", 0o600)
    os.symlink("a.txt", root / "link")
    os.symlink("/etc/passwd", root / "outside")
    return root


class ActionMaker:
    """Store small run-like entries: a blob output and a tree output of a few files."""

    def __init__(self, tmp_path: Path) -> None:
        self._tmp = tmp_path
        self._count = 0

    def __call__(
        self, store: CacheStore, seed: str, files: dict[str, str] | None = None
    ) -> ActionManifest:
        self._count += 1
        source = self._tmp / f"tree-{self._count}"
        for name, text in (files or {"a.txt": f"a of {seed}", "sub/b.txt": "shared"}).items():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            (source / name).write_text(text)
        with store.in_use():
            tree = store.put_tree(source)
            blob = store.put_bytes(f"result of {seed}".encode())
            manifest = ActionManifest.create(
                "run",
                digest_json(["test", seed]),
                {
                    "result": OutputRef(digest=blob, type="blob"),
                    "workspace": OutputRef(digest=tree.digest, type="tree"),
                },
                {"seed": seed},
            )
            store.put_action(manifest)
        return manifest


@pytest.fixture
def make_action(tmp_path: Path) -> ActionMaker:
    return ActionMaker(tmp_path)


@pytest.fixture
def file_remote(tmp_path: Path) -> Iterator[RemoteStore]:
    with RemoteStore(f"file://{tmp_path}/remote") as remote:
        yield remote
