"""Change detection of incremental checkpoints: parsing the container's listing, deciding
which files keep their digest, the racy window, and the state a checkpoint remembers."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from agevalx.cache.statcache import TREE_STATES_KEPT, StatCache
from agevalx.runner.incremental import (
    COARSE_WINDOW_NS,
    FINE_WINDOW_NS,
    Listing,
    Remembered,
    Stat,
    build_manifest,
    parse_listing,
    plan,
    remember,
    split_listings,
)

pytestmark = pytest.mark.unit

SECOND = 1_000_000_000
LISTED = 1_800_000_000 * SECOND
OLD = LISTED - 3600 * SECOND + 123_456_789


def _record(kind: str, path: str, *, ino: int = 7, size: int = 0, target: str = "") -> bytes:
    head = f"{kind} 40 {ino} 1 {size} 644 1700000000.1234567890 1700000001.5000000000 "
    return head.encode() + path.encode() + b"\0" + target.encode() + b"\0"


def _listing_bytes(*records: bytes, clock: int = LISTED) -> bytes:
    return str(clock).encode() + b"\0" + _record("d", "", ino=1) + b"".join(records)


def _file(ino: int = 10, size: int = 5, when: int = OLD, mode: int = 0o644) -> Stat:
    return Stat("f", dev=40, ino=ino, size=size, mode=mode, mtime_ns=when, ctime_ns=when)


def _present(_digest: str) -> bool:
    return True


def test_listing_keeps_files_dirs_and_symlinks_with_exact_times() -> None:
    listing = parse_listing(
        _listing_bytes(
            _record("f", "dir/with space\nand newline", ino=11, size=3),
            _record("d", "dir", ino=12),
            _record("l", "dir/link", ino=13, target="../../outside target"),
            _record("p", "fifo", ino=14),
            _record("s", "socket", ino=15),
        )
    )
    assert listing is not None
    assert listing.started_ns == LISTED
    assert sorted(listing.entries) == ["dir", "dir/link", "dir/with space\nand newline"]
    file = listing.entries["dir/with space\nand newline"]
    assert (file.type, file.ino, file.size, file.mode) == ("f", 11, 3, 0o644)
    assert file.mtime_ns == 1_700_000_000_123_456_789
    assert file.ctime_ns == 1_700_000_001_500_000_000
    assert listing.entries["dir/link"].target == "../../outside target"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not-a-clock\0" + _record("d", "", ino=1),
        _listing_bytes()[:-1],  # truncated
        str(LISTED).encode() + b"\0" + _record("l", "", ino=1, target="/elsewhere"),  # root
        _listing_bytes(_record("f", "caf\xe9", ino=3).replace(b"caf\xc3\xa9", b"caf\xe9")),
        _listing_bytes(b"f 40 x 1 3 644 1.0 1.0 bad\0\0"),
        _listing_bytes(b"f 40 3 1 3 644 1.0e3 1.0 bad\0\0"),
    ],
    ids=["empty", "clock", "truncated", "root-symlink", "non-utf8", "inode", "time"],
)
def test_unusable_listings_mean_a_full_re_read(data: bytes) -> None:
    assert parse_listing(data) is None


def test_one_exec_lists_several_roots_and_a_failed_root_is_none() -> None:
    clock = str(LISTED).encode() + b"\0"
    first = _record("d", "", ino=1) + _record("f", "a", ino=2, size=1)
    data = clock + first + b"end 0\0\0" + b"end 1\0\0"
    listed = split_listings(data, 2)
    assert listed[1] is None
    assert listed[0] is not None and list(listed[0].entries) == ["a"]
    assert split_listings(data, 3) == [None, None, None]
    assert split_listings(data + b"junk\0", 2) == [None, None]


def test_only_files_unchanged_since_a_settled_listing_keep_their_digest() -> None:
    kept = _file(ino=10)
    remembered = Remembered(LISTED, {name: (kept, "d" * 32) for name in ("same", "moved")})
    current = {"same": kept, "renamed": replace(kept, ino=11), "new": _file(ino=30)}
    work = plan(Listing(LISTED + SECOND, current), remembered, _present)
    assert work is not None
    assert work.reused == {"same": "d" * 32}
    assert sorted(work.dirty) == ["new", "renamed"]  # "moved" is gone: it is no entry at all


def test_each_changed_stat_field_alone_makes_a_file_dirty() -> None:
    kept = _file()
    for field, value in [
        ("ctime_ns", OLD + 1),
        ("mtime_ns", OLD - 1),
        ("size", 6),
        ("ino", 99),
        ("dev", 41),
        ("mode", 0o600),
    ]:
        changed = replace(kept, **{field: value})
        work = plan(
            Listing(LISTED, {"f": changed}), Remembered(LISTED, {"f": (kept, "a" * 32)}), _present
        )
        assert work is not None and work.dirty == ["f"], field


def test_a_path_that_became_a_directory_or_symlink_is_not_a_reused_file() -> None:
    kept = _file()
    remembered = Remembered(LISTED, {"x": (kept, "a" * 32), "y": (kept, "a" * 32)})
    entries = {
        "x": replace(kept, type="d"),
        "y": replace(kept, type="l", target="x"),
        "x/inner": _file(ino=50),
    }
    work = plan(Listing(LISTED, entries), remembered, _present)
    assert work is not None
    assert work.reused == {} and work.dirty == ["x/inner"]


def test_a_digest_whose_blob_left_the_cache_is_read_again() -> None:
    kept = _file()
    remembered = Remembered(LISTED, {"f": (kept, "a" * 32)})
    work = plan(Listing(LISTED, {"f": kept}), remembered, lambda digest: False)
    assert work is not None and work.dirty == ["f"]


def test_hard_links_inside_the_tree_mean_a_full_re_read() -> None:
    entries = {"a": _file(ino=5), "b": _file(ino=5), "c": _file(ino=6)}
    assert plan(Listing(LISTED, entries), None, _present) is None
    other_device = {"a": replace(entries["a"], dev=1), "b": entries["b"]}
    assert plan(Listing(LISTED, other_device), None, _present) is not None


def test_racy_files_are_not_remembered() -> None:
    """A file changed too close to the listing could change again with equal stat data."""
    entries = {
        "old": _file(ino=1),
        "fine-racy": _file(ino=2, when=LISTED - FINE_WINDOW_NS + 1),
        "fine-settled": _file(ino=3, when=LISTED - FINE_WINDOW_NS - 1),
        "coarse-racy": _file(ino=4, when=LISTED - COARSE_WINDOW_NS + SECOND),  # whole second
        "coarse-settled": _file(ino=5, when=LISTED - COARSE_WINDOW_NS - SECOND),
        "future-mtime": replace(_file(ino=6), mtime_ns=LISTED + 3600 * SECOND),
        "same-moment": _file(ino=7, when=LISTED),
    }
    files = {path: (f"{index:032x}", st.size) for index, (path, st) in enumerate(entries.items())}
    kept = remember(Listing(LISTED, entries), files)
    assert sorted(kept.files) == ["coarse-settled", "fine-settled", "old"]
    assert kept.files["old"] == (entries["old"], files["old"][0])


def test_a_file_read_at_another_size_than_listed_is_not_remembered() -> None:
    entries = {"grew": _file(size=5)}
    assert remember(Listing(LISTED, entries), {"grew": ("a" * 32, 9)}).files == {}


def test_remembered_state_round_trips_and_garbage_is_no_state() -> None:
    state = Remembered(LISTED, {"a b/c": (_file(), "a" * 32), "d": (_file(ino=2), "b" * 32)})
    assert Remembered.decode(state.encode()) == state
    for garbage in (b"", b"not zlib", state.encode()[:-3]):
        assert Remembered.decode(garbage) is None


def test_manifest_modes_follow_the_owner_execute_bit_as_a_full_re_read_does() -> None:
    entries = {
        "bin": _file(ino=1, mode=0o744),
        "group-exec-only": _file(ino=2, mode=0o611),
        "plain": _file(ino=3, mode=0o600),
        "sub": replace(_file(ino=4), type="d", mode=0o700),
        "sub/link": replace(_file(ino=5), type="l", target="../plain", mode=0o777),
    }
    files = {path: ("a" * 32, 5) for path, st in entries.items() if st.type == "f"}
    manifest = build_manifest(Listing(LISTED, entries), files)
    assert [(e.path, e.type, e.mode, e.size) for e in manifest.entries] == [
        ("bin", "file", 0o755, 5),
        ("group-exec-only", "file", 0o644, 5),
        ("plain", "file", 0o644, 5),
        ("sub", "dir", 0o755, 0),
        ("sub/link", "symlink", 0o777, len("../plain")),
    ]


def test_stat_cache_keeps_tree_states_across_reopening_and_drops_the_oldest(
    tmp_path: Path,
) -> None:
    path = tmp_path / "statcache.db"
    with StatCache(path) as cache:
        for index in range(TREE_STATES_KEPT + 2):
            cache.remember_tree_state(f"scope-{index}", f"state {index}".encode(), index)
        cache.remember_tree_state("scope-5", b"replaced", TREE_STATES_KEPT + 5)
    with StatCache(path) as reopened:
        assert reopened.tree_state("scope-0") is None
        assert reopened.tree_state("scope-1") is None
        assert reopened.tree_state("scope-5") == b"replaced"
        assert reopened.tree_state(f"scope-{TREE_STATES_KEPT + 1}") == (
            f"state {TREE_STATES_KEPT + 1}".encode()
        )
