"""A gc.lock that is not a regular file is a coded `cache_lock_unusable` with a hint.

Every command that opens the cache says so in one line (or one JSON object), never a
traceback or `internal_error`; the lock is never taken through a link leading out of the cache.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from agevalx.cache import CacheStore
from agevalx.cache.errors import CacheError
from agevalx.cli import main
from tests.unit.harbor.builders import write_task

pytestmark = pytest.mark.unit


def _as_directory(lock: Path) -> None:
    lock.mkdir()
    (lock / "keep").write_text("someone's file\n")


def _as_fifo(lock: Path) -> None:
    os.mkfifo(lock)


def _as_link(lock: Path) -> None:
    lock.symlink_to(lock.parent.parent / "elsewhere.lock")


BREAKERS: dict[str, Callable[[Path], None]] = {
    "directory": _as_directory,
    "fifo": _as_fifo,
    "link": _as_link,
}


@pytest.fixture(params=sorted(BREAKERS))
def broken_cache(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A cache whose gc.lock is replaced by a directory, a FIFO or a symlink."""
    root = tmp_path / "cache"
    with CacheStore(root) as store, store.in_use():
        pass
    (root / "gc.lock").unlink()
    BREAKERS[request.param](root / "gc.lock")
    return root


def test_opening_the_store_refuses_the_lock_with_a_hint(broken_cache: Path) -> None:
    with pytest.raises(CacheError) as caught:
        CacheStore(broken_cache)
    error = caught.value
    assert (error.code, error.file) == ("cache_lock_unusable", str(broken_cache / "gc.lock"))
    assert "out of the way" in (error.hint or "")
    assert not (broken_cache.parent / "elsewhere.lock").exists()


@pytest.mark.parametrize(
    "command", [["cache", "gc"], ["cache", "ls"], ["cache", "verify"], ["cache", "du"]]
)
def test_cache_commands_report_the_unusable_lock(
    broken_cache: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    code = main([*command, "--cache-dir", str(broken_cache), "--json"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    assert code == 1
    assert json.loads(captured.out)["error"]["code"] == "cache_lock_unusable"


def test_lock_and_run_report_the_unusable_lock_in_one_line(
    broken_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = write_task(tmp_path / "dataset", "t")
    for verb in ("lock", "run"):
        code = main([verb, str(task), "--agent", "oracle", "--cache-dir", str(broken_cache)])
        captured = capsys.readouterr()
        assert code == 1
        assert "Traceback" not in captured.out + captured.err
        assert "[cache_lock_unusable]" in captured.out + captured.err
        assert "hint: move" in captured.out + captured.err


def test_a_missing_lock_file_is_created_again(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    for _ in range(2):
        with CacheStore(root) as store, store.in_use():
            assert (root / "gc.lock").is_file()
        (root / "gc.lock").unlink()
