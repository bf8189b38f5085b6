"""Incremental checkpoints of a real container: only changed files are read, and every
tree (and cache entry) is the one a full re-read of the directory gives."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agevalx.cache import layout
from agevalx.cache.errors import CacheError
from agevalx.cache.store import CacheStore
from agevalx.environments.container import AttemptContainer, ContainerSpec
from agevalx.runner import incremental
from agevalx.runner.snapshot import Snapshot, SnapshotRoots, snapshot

pytestmark = pytest.mark.integration

DEFAULT_ROOTS = SnapshotRoots()
SETTLE = 0.3
"""Seconds after a write before it is outside the racy window of the next listing."""


@pytest.fixture
def container(docker_engine: object) -> Iterator[AttemptContainer]:
    started = AttemptContainer.start(
        ContainerSpec(image="ageval/base:bookworm", name_hint="incremental-checkpoints")
    )
    try:
        yield started
    finally:
        started.remove()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[CacheStore]:
    with CacheStore(tmp_path / "cache") as opened:
        yield opened


def run(container: AttemptContainer, command: str) -> None:
    result = container.exec(command, user="root")
    assert result.exit_code == 0, result.output


@dataclass(frozen=True)
class Reference:
    """A full re-read, into a cache of its own: the digests and the bytes it stored."""

    taken: Snapshot
    trees: dict[str, bytes]
    blobs: dict[str, bytes]


def full_re_read(container: AttemptContainer, tmp_path: Path, roots: SnapshotRoots) -> Reference:
    with CacheStore(tmp_path / f"reference-{time.monotonic_ns()}") as reference:
        taken = snapshot(container, reference, roots, incremental=False)
        trees = {
            digest: layout.tree_path(reference.root, digest).read_bytes()
            for digest in (taken.workspace, taken.home)
        }
        blobs = {
            entry.digest or "": reference.get_bytes(entry.digest or "")
            for digest in trees
            for entry in reference.get_tree(digest).files()
        }
    return Reference(taken, trees, blobs)


def checkpoint_matches_full(
    container: AttemptContainer,
    store: CacheStore,
    tmp_path: Path,
    roots: SnapshotRoots = DEFAULT_ROOTS,
) -> Snapshot:
    """An incremental checkpoint, checked against a full re-read of the same state: the same
    tree digests, the same stored tree bytes, the same blob bytes."""
    reference = full_re_read(container, tmp_path, roots)
    taken = snapshot(container, store, roots)
    expected = reference.taken
    assert (taken.workspace, taken.home, taken.size) == (
        expected.workspace,
        expected.home,
        expected.size,
    )
    for digest, data in reference.trees.items():
        assert layout.tree_path(store.root, digest).read_bytes() == data
        for entry in store.get_tree(digest).files():
            assert store.get_bytes(entry.digest or "") == reference.blobs[entry.digest or ""]
    return taken


def test_one_changed_file_is_the_only_one_read_and_the_tree_equals_a_full_re_read(
    container: AttemptContainer,
    store: CacheStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run(
        container,
        "cd /attempt/workspace"
        " && for i in $(seq 1 40); do head -c 100K /dev/urandom > f$i.bin; done",
    )
    run(container, "echo settings > /attempt/home/.config")
    time.sleep(SETTLE)
    first = snapshot(container, store)
    assert (first.files_read, first.bytes_read) == (41, 40 * 102400 + len("settings\n"))
    run(container, "head -c 12345 /dev/urandom > /attempt/workspace/f7.bin")
    time.sleep(SETTLE)  # else f7 is racy for `second`, and read again by `unchanged`

    def no_full_re_read(*args: object) -> object:
        raise AssertionError("the checkpoint re-read a whole directory")

    monkeypatch.setattr(incremental, "full_trees", no_full_re_read)
    second = snapshot(container, store)
    assert (second.files_read, second.bytes_read) == (1, 12345)
    assert second.workspace != first.workspace and second.home == first.home
    monkeypatch.undo()
    reference = full_re_read(container, tmp_path, SnapshotRoots()).taken
    assert (second.workspace, second.home) == (reference.workspace, reference.home)
    unchanged = checkpoint_matches_full(container, store, tmp_path)
    assert (unchanged.files_read, unchanged.workspace) == (0, second.workspace)


TRICKY_STEPS = [
    ("same size, mtime set back", "printf BBBB > same && touch -d '2001-02-03 04:05:06' same"),
    ("deleted file", "rm gone"),
    ("renamed file", "mv old-name new-name"),
    ("execute bit added, content unchanged", "chmod 755 plain"),
    ("group-only execute bit", "chmod 611 plain"),
    ("symlink retargeted", "ln -sfn new-name link"),
    ("directory replaced by a file", "rm -rf dir && echo file-now > dir"),
    ("file replaced by a directory", "rm f2 && mkdir -p f2/inner && echo x > f2/inner/y"),
    ("symlink replaced by a file", "rm link && echo was-a-link > link"),
    ("empty directory and a fifo", "mkdir empty && mkfifo pipe"),
    ("unreadable file", "echo secret > locked && chmod 000 locked"),
    ("odd names", "echo 1 > 'sp ace' && echo 2 > \"$(printf 'new\\nline')\" && echo 3 > ./-dash"),
    ("escaping symlink", "ln -s ../../../etc/passwd escape"),
    (
        "UTF-8 and long names",
        "echo 4 > \"$(printf 'caf\\303\\251')\" && echo 5 > $(printf 'n%.0s' $(seq 150))",
    ),
    ("file grows", "head -c 300K /dev/urandom >> f1"),
]
HARD_LINK_STEPS = [
    # a full re-read keeps the first path of a hard-linked file only (Docker's archive makes
    # the others link members, which are not snapshotted): the tree stays as it was
    ("hard link inside the tree", "ln f1 f1-again"),
    ("hard link removed", "rm f1-again"),
]


def test_tricky_changes_give_the_trees_of_a_full_re_read(
    container: AttemptContainer, store: CacheStore, tmp_path: Path
) -> None:
    run(
        container,
        "cd /attempt/workspace && printf AAAA > same && touch -d '2001-02-03 04:05:06' same"
        " && echo bye > gone && echo moving > old-name && echo p > plain && ln -s plain link"
        " && mkdir -p dir/sub && echo deep > dir/sub/file && echo one > f1 && echo two > f2",
    )
    time.sleep(SETTLE)
    previous = checkpoint_matches_full(container, store, tmp_path)
    for description, command in TRICKY_STEPS:
        run(container, f"cd /attempt/workspace && {command}")
        time.sleep(SETTLE)
        taken = checkpoint_matches_full(container, store, tmp_path)
        assert taken.workspace != previous.workspace, description
        previous = taken
    for description, command in HARD_LINK_STEPS:
        run(container, f"cd /attempt/workspace && {command}")
        time.sleep(SETTLE)
        taken = checkpoint_matches_full(container, store, tmp_path)
        assert (taken.workspace, taken.home) == (previous.workspace, previous.home), description


def test_a_file_rewritten_right_after_a_checkpoint_is_read_again(
    container: AttemptContainer, store: CacheStore, tmp_path: Path
) -> None:
    """Racy files: written just before a listing, a file is not trusted by the next one,
    even when a same-size rewrite restores its mtime."""
    run(container, "cd /attempt/workspace && echo settled > old")
    time.sleep(SETTLE)
    run(container, "cd /attempt/workspace && printf 1111 > racy && touch -d @1000000000 racy")
    snapshot(container, store)  # "racy" was changed within the racy window of this listing
    run(container, "cd /attempt/workspace && printf 2222 > racy && touch -d @1000000000 racy")
    taken = checkpoint_matches_full(container, store, tmp_path)
    assert taken.files_read == 1
    time.sleep(SETTLE)
    assert checkpoint_matches_full(container, store, tmp_path).files_read == 0


def test_a_reattaching_process_continues_incrementally(
    container: AttemptContainer, tmp_path: Path
) -> None:
    run(container, "cd /attempt/workspace && echo a > a && echo b > b")
    time.sleep(SETTLE)
    with CacheStore(tmp_path / "cache") as first_process:
        first = snapshot(container, first_process)
    with CacheStore(tmp_path / "cache") as second_process:
        again = snapshot(container, second_process)
    assert first.files_read == 2
    assert (again.files_read, again.workspace) == (0, first.workspace)


def test_without_gnu_find_the_checkpoint_falls_back_to_a_full_re_read(
    container: AttemptContainer, store: CacheStore, tmp_path: Path
) -> None:
    run(container, "cd /attempt/workspace && echo a > a && mv /usr/bin/find /usr/bin/find.gone")
    time.sleep(SETTLE)
    checkpoint_matches_full(container, store, tmp_path)
    taken = checkpoint_matches_full(container, store, tmp_path)
    assert taken.files_read == 1  # read again: nothing was listed


def test_missing_and_symlinked_roots_are_taken_as_a_full_re_read_takes_them(
    container: AttemptContainer, store: CacheStore, tmp_path: Path
) -> None:
    run(container, "mkdir -p /real && echo r > /real/r && ln -s /real /linked")
    for workspace in ("/nowhere", "/linked", "/real/"):
        checkpoint_matches_full(container, store, tmp_path, SnapshotRoots(workspace=workspace))


def test_a_name_that_is_not_utf8_fails_as_a_full_re_read_does(
    container: AttemptContainer, store: CacheStore, tmp_path: Path
) -> None:
    run(container, "cd /attempt/workspace && echo x > \"$(printf 'caf\\351')\"")
    with pytest.raises(CacheError) as full:
        snapshot(container, store, incremental=False)
    with pytest.raises(CacheError) as taken:
        snapshot(container, store)
    assert taken.value.code == full.value.code == "cache_unencodable_path"
