"""The attempt directories' archive, with the seed's trees in the same copy."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from agevalx.environments.archive import tar_directories, tar_directory

pytestmark = pytest.mark.unit


def _members(data: bytes) -> list[tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        return archive.getmembers()


def test_the_directories_and_their_parents_come_once_each_in_order() -> None:
    members = _members(tar_directories(("/attempt/workspace", "/attempt/home")))
    assert [m.name for m in members] == ["attempt", "attempt/workspace", "attempt/home"]
    assert all(m.isdir() and m.mode == 0o755 for m in members)


def test_a_seed_tree_follows_the_directories_at_its_full_container_path(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "nested").mkdir(parents=True)
    (data / "input.jsonl").write_text('{"n": 1}\n')
    (data / "nested" / "run.sh").write_text("echo hi\n")
    os.chmod(data / "nested" / "run.sh", 0o750)
    os.symlink("../input.jsonl", data / "nested" / "link")

    archive = tar_directories(("/attempt/workspace",), trees=[(data, "/attempt/workspace/data")])

    members = {m.name: m for m in _members(archive)}
    names = list(members)
    assert names[:2] == ["attempt", "attempt/workspace"]
    assert set(names[2:]) == {
        "attempt/workspace/data",
        "attempt/workspace/data/input.jsonl",
        "attempt/workspace/data/nested",
        "attempt/workspace/data/nested/run.sh",
        "attempt/workspace/data/nested/link",
    }
    assert members["attempt/workspace/data/nested/run.sh"].mode == 0o750
    link = members["attempt/workspace/data/nested/link"]
    assert link.issym() and link.linkname == "../input.jsonl"
    with tarfile.open(fileobj=io.BytesIO(archive)) as opened:
        extracted = opened.extractfile("attempt/workspace/data/input.jsonl")
        assert extracted is not None and extracted.read() == b'{"n": 1}\n'


def test_the_named_regular_files_of_a_directory_arrive_executable(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test.sh").write_text("echo hi\n")
    (tests / "test.sh").chmod(0o640)
    (tests / "helper.sh").write_text("echo helper\n")
    (tests / "helper.sh").chmod(0o640)
    (tests / "link.sh").symlink_to("helper.sh")
    data = tar_directory(tests, "tests", executable=("test.sh", "link.sh"))
    modes = {m.name: (m.type, m.mode) for m in _members(data)}
    # as `chmod +x`: executable by all, the rest of the mode kept
    assert modes["tests/test.sh"] == (tarfile.REGTYPE, 0o751)
    # only the named files; a link's own mode means nothing (its target is not in the tar)
    assert modes["tests/helper.sh"] == (tarfile.REGTYPE, 0o640)
    assert modes["tests/link.sh"][0] == tarfile.SYMTYPE
