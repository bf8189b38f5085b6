"""Fixtures for the cache tests: a fresh store and a small source tree."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agevalx.cache import CacheStore


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
