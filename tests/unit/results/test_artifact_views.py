"""A run's `artifacts/` view is written from the cache when it differs, and left alone when it
already holds the run's artifacts: rewriting it on every run kept the views' stamp (and the
command memo) from ever vouching for a job whose tasks collect artifacts."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agevalx.cache.manifest import ActionManifest, OutputRef
from agevalx.cache.store import CacheStore
from agevalx.hashing import digest_json
from agevalx.operations.views import ARTIFACTS_DIR, _write_artifacts

pytestmark = pytest.mark.unit


def _run(store: CacheStore, source: Path) -> ActionManifest:
    tree = OutputRef(digest=store.put_tree(source).digest, type="tree")
    return ActionManifest(
        kind="run",
        key=digest_json(["artifact-views", str(source)]),
        created=datetime(2026, 1, 1, tzinfo=UTC),
        outputs={"artifacts": tree},
    )


def test_artifacts_already_written_are_kept_and_changed_ones_written_again(
    tmp_path: Path,
) -> None:
    source = tmp_path / "collected"
    (source / "logs").mkdir(parents=True)
    (source / "logs" / "note.txt").write_text("a note")
    target = tmp_path / "attempt" / ARTIFACTS_DIR
    with CacheStore(tmp_path / "cache") as store:
        run = _run(store, source)
        _write_artifacts(store, run, target)
        written = os.lstat(target / "logs" / "note.txt")
        assert (target / "logs" / "note.txt").read_text() == "a note"

        _write_artifacts(store, run, target)
        again = os.lstat(target / "logs" / "note.txt")
        assert (again.st_ino, again.st_ctime_ns) == (written.st_ino, written.st_ctime_ns)

        (target / "logs" / "note.txt").write_text("edited by hand")
        (target / "stray.txt").write_text("not the run's")
        _write_artifacts(store, run, target)
        assert (target / "logs" / "note.txt").read_text() == "a note"
        assert not (target / "stray.txt").exists()


@pytest.mark.parametrize("linked", ["a-folder-with-the-files", "an-empty-folder"])
def test_a_link_in_place_of_the_artifacts_folder_is_neither_trusted_nor_written_through(
    linked: str, tmp_path: Path
) -> None:
    source = tmp_path / "collected"
    source.mkdir()
    (source / "answer.txt").write_text("42")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if linked == "a-folder-with-the-files":
        (elsewhere / "answer.txt").write_text("42")  # holds the same files, elsewhere
    target = tmp_path / "attempt" / ARTIFACTS_DIR
    target.parent.mkdir()
    target.symlink_to(elsewhere, target_is_directory=True)
    before = sorted(path.name for path in elsewhere.iterdir())
    with CacheStore(tmp_path / "cache") as store:
        _write_artifacts(store, _run(store, source), target)
    assert not target.is_symlink()
    assert (target / "answer.txt").read_text() == "42"
    assert sorted(path.name for path in elsewhere.iterdir()) == before


def test_a_pipe_in_the_artifacts_folder_makes_it_written_again(tmp_path: Path) -> None:
    source = tmp_path / "collected"
    source.mkdir()
    (source / "answer.txt").write_text("42")
    target = tmp_path / "attempt" / ARTIFACTS_DIR
    with CacheStore(tmp_path / "cache") as store:
        run = _run(store, source)
        _write_artifacts(store, run, target)
        os.mkfifo(target / "pipe")  # no part of a tree, so the digest alone would not see it
        _write_artifacts(store, run, target)
    assert sorted(path.name for path in target.iterdir()) == ["answer.txt"]
