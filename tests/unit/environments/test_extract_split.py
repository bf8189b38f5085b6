"""One archive of the attempt's folder gives its workspace and home, each into its own
destination, with the same refusals as one directory's archive; its other entries are
dropped."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from agevalx.environments.archive import extract_split, extract_stream
from agevalx.environments.container import AttemptContainer
from agevalx.errors import AgevalError

pytestmark = pytest.mark.unit


def _tar(*members: tuple[str, str, str]) -> bytes:
    """(name, kind, content or link target): kind is file, dir, symlink or fifo."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, kind, value in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                data = value.encode()
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
                continue
            info.type = {"dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE}.get(
                kind, tarfile.FIFOTYPE
            )
            info.mode = 0o755
            info.linkname = value
            archive.addfile(info)
    return buffer.getvalue()


MEMBERS = [
    ("attempt", "dir", ""),
    ("attempt/.ageval", "dir", ""),
    ("attempt/.ageval/solution.sh", "file", "echo staged"),
    ("attempt/home", "dir", ""),
    ("attempt/home/.config", "file", "settings"),
    ("attempt/home/fifo", "fifo", ""),
    ("attempt/home/out", "symlink", "../../etc/passwd"),
    ("attempt/workspace", "dir", ""),
    ("attempt/workspace/src", "dir", ""),
    ("attempt/workspace/src/a.txt", "file", "a"),
    ("attempt/workspace/link", "symlink", "src/a.txt"),
]
ATTEMPT = _tar(*MEMBERS)


def _files(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): (
            f"-> {path.readlink()}" if path.is_symlink() else path.read_text()
        )
        for path in sorted(root.rglob("*"))
        if path.is_symlink() or path.is_file()
    }


def test_each_directory_lands_in_its_destination_as_its_own_archive_would(tmp_path: Path) -> None:
    places = {"workspace": tmp_path / "w", "home": tmp_path / "h"}
    assert extract_split([ATTEMPT], "attempt", places) == {"workspace", "home"}
    assert _files(tmp_path / "w") == {"link": "-> src/a.txt", "src/a.txt": "a"}
    assert _files(tmp_path / "h") == {".config": "settings", "out": "-> ../../etc/passwd"}
    for name, place in places.items():  # what one directory's own archive gives
        inside = f"attempt/{name}"
        alone = _tar(
            *[
                (member.removeprefix("attempt/"), kind, value)
                for member, kind, value in MEMBERS
                if member == inside or member.startswith(f"{inside}/")
            ]
        )
        extract_stream([alone], tmp_path / f"alone-{name}", name)
        assert _files(place) == _files(tmp_path / f"alone-{name}")
    assert not list(tmp_path.rglob("solution.sh")), "the staging folder is dropped"


def test_a_missing_or_linked_directory_is_left_to_its_own_copy(tmp_path: Path) -> None:
    archive = _tar(
        ("attempt", "dir", ""),
        ("attempt/home", "symlink", "/root"),
        ("attempt/workspace", "dir", ""),
        ("attempt/workspace/a", "file", "a"),
    )
    places = {"workspace": tmp_path / "w", "home": tmp_path / "h", "data": tmp_path / "d"}
    assert extract_split([archive], "attempt", places) == {"workspace"}
    assert _files(tmp_path / "w") == {"a": "a"} and _files(tmp_path / "h") == {}


@pytest.mark.parametrize(
    "member",
    [("attempt/../etc/x", "file", "x"), ("other/home/x", "file", "x"), ("/attempt/x", "file", "")],
)
def test_a_member_outside_the_folder_is_refused(
    tmp_path: Path, member: tuple[str, str, str]
) -> None:
    archive = _tar(("attempt", "dir", ""), ("attempt/home", "dir", ""), member)
    with pytest.raises(AgevalError) as raised:
        extract_split([archive], "attempt", {"home": tmp_path / "h"})
    assert raised.value.code == "unsafe_archive"


def test_nothing_is_written_through_a_link_inside_a_directory(tmp_path: Path) -> None:
    archive = _tar(
        ("attempt", "dir", ""),
        ("attempt/home", "dir", ""),
        ("attempt/home/up", "symlink", "../../.."),
        ("attempt/home/up/escaped", "file", "x"),
    )
    with pytest.raises(AgevalError) as raised:
        extract_split([archive], "attempt", {"home": tmp_path / "h"})
    assert raised.value.code == "unsafe_archive"
    assert not list(tmp_path.rglob("escaped"))


class _Engine:
    def __init__(self) -> None:
        self.paths: list[str] = []

    def get_archive(self, path: str) -> tuple[list[bytes], dict[str, object]]:
        self.paths.append(path)
        return [ATTEMPT], {}


def test_a_container_copies_both_directories_in_one_archive(tmp_path: Path) -> None:
    engine = _Engine()
    places = {"workspace": tmp_path / "w", "home": tmp_path / "h"}
    assert AttemptContainer(engine).get_directories("/attempt", places) == {"workspace", "home"}
    assert engine.paths == ["/attempt"]
    assert _files(tmp_path / "h")[".config"] == "settings"
