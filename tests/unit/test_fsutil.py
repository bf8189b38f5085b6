"""A view whose bytes are unchanged is not written again; anything else at its path is replaced."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agevalx.fsutil import write_if_changed

pytestmark = pytest.mark.unit


def test_an_unchanged_view_is_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / ".ageval" / "runs" / "a" / "result.json"
    assert write_if_changed(path, b"{}\n")
    before = os.stat(path)
    assert not write_if_changed(path, b"{}\n")
    after = os.stat(path)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


@pytest.mark.parametrize("old", [b"{ }\n", b"{}", b"{}\n\n", b"[]\n"])
def test_a_view_with_other_bytes_is_replaced(tmp_path: Path, old: bytes) -> None:
    path = tmp_path / "result.json"
    path.write_bytes(old)
    assert write_if_changed(path, b"{}\n")
    assert path.read_bytes() == b"{}\n"


def test_a_link_is_replaced_and_its_target_untouched(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_bytes(b"{}\n")
    path = tmp_path / "result.json"
    path.symlink_to(target)
    assert write_if_changed(path, b"{}\n")  # same bytes behind the link: still replaced
    assert not path.is_symlink() and path.read_bytes() == b"{}\n"
    assert target.read_bytes() == b"{}\n"


def test_a_fifo_is_replaced_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    os.mkfifo(path)
    assert write_if_changed(path, b"")
    assert path.is_file() and path.read_bytes() == b""
