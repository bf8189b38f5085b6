"""Tar streams between the host, the cache and containers; untrusted members are refused."""

from __future__ import annotations

import io
import os
import tarfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

from agevalx.errors import AgevalError


def tar_directory(source: Path, arcname: str, executable: Iterable[str] = ()) -> bytes:
    """A tar of `source` whose top-level directory is `arcname`; symlinks are not followed.
    The regular files of `executable` (paths relative to `source`) are executable by all,
    as `chmod +x` makes them."""
    marked = {f"{arcname}/{name}" for name in executable}

    def chmod(member: tarfile.TarInfo) -> tarfile.TarInfo:
        if member.isfile() and member.name in marked:
            member.mode |= 0o111
        return member

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(source, arcname=arcname, recursive=True, filter=chmod)
    return buffer.getvalue()


def tar_files(files: dict[str, tuple[bytes, int]]) -> bytes:
    """A tar holding `{relative path: (content, mode)}`, with parent directories."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        directories: set[str] = set()
        for name, (content, mode) in sorted(files.items()):
            for parent in reversed(PurePosixPath(name).parents[:-1]):
                if str(parent) not in directories:
                    directories.add(str(parent))
                    info = tarfile.TarInfo(str(parent))
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    archive.addfile(info)
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(content), mode
            archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def tar_directories(paths: Iterable[str], trees: Iterable[tuple[Path, str]] = ()) -> bytes:
    """A tar that makes the absolute directories `paths` and their parents when extracted at
    `/` (root's, mode 0755, modified now: what `mkdir -p` as root makes), then holds each host
    directory of `trees` at its absolute container path, as `tar_directory` does (after the
    directories, so a tree may lie under one of them). A directory that exists already takes
    that owner, mode and time."""
    buffer = io.BytesIO()
    now = time.time()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        made: set[str] = set()
        for path in paths:
            relative = PurePosixPath(path.strip("/"))
            for directory in [*reversed(relative.parents[:-1]), relative]:
                if str(directory) in made:
                    continue
                made.add(str(directory))
                info = tarfile.TarInfo(str(directory))
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, now
                archive.addfile(info)
        for source, destination in trees:
            archive.add(source, arcname=destination.strip("/"), recursive=True)
    return buffer.getvalue()


def _strip(member: tarfile.TarInfo, strip: str) -> tarfile.TarInfo | None:
    path = PurePosixPath(member.name)
    if path.is_absolute() or ".." in path.parts or not path.parts or path.parts[0] != strip:
        raise AgevalError("unsafe_archive", f"archive member {member.name!r} escapes {strip}/")
    if len(path.parts) == 1 or not (member.isfile() or member.isdir() or member.issym()):
        return None  # the root itself; devices, fifos and hard links are not snapshotted
    return member.replace(name="/".join(path.parts[1:]), deep=False)


def _link_escapes(member: tarfile.TarInfo) -> bool:
    target = PurePosixPath(member.linkname)
    depth = len(PurePosixPath(member.name).parts) - 1
    return target.is_absolute() or target.parts.count("..") > depth


def _place_symlink(member: tarfile.TarInfo, destination: Path) -> None:
    """Recreate a link that points outside the snapshot as data: it is never followed."""
    path = destination / member.name
    if not os.path.realpath(path.parent).startswith(os.path.realpath(destination)):
        raise AgevalError("unsafe_archive", f"archive member {member.name!r} escapes its root")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    os.symlink(member.linkname, path)


def extract_stream(chunks: Iterable[bytes], destination: Path, strip: str) -> None:
    """Extract a container archive (top directory `strip`) into `destination`, safely.

    Members must stay under `strip/`; device files and hard links are dropped. Symlinks are
    recreated as links; one pointing outside is kept as data, and a member that would be
    written through such a link is refused (`unsafe_archive`).
    """
    _destination(destination)
    with tarfile.open(fileobj=ChunkReader(chunks), mode="r|") as archive:
        for member in archive:
            safe = _strip(member, strip)
            if safe is not None:
                _extract(archive, safe, destination)


def extract_split(
    chunks: Iterable[bytes], strip: str, destinations: Mapping[str, Path]
) -> set[str]:
    """Extract a container archive of a directory (top directory `strip`) whose
    subdirectories named in `destinations` each go into their destination, as
    `extract_stream` extracts one; the archive's other members are read and dropped. Returns
    the names found as directories: one missing, or not a directory (a symlink), is not
    extracted."""
    for destination in destinations.values():
        _destination(destination)
    found: set[str] = set()
    with tarfile.open(fileobj=ChunkReader(chunks), mode="r|") as archive:
        for member in archive:
            inner = _strip(member, strip)
            if inner is None:
                continue
            name, _, rest = inner.name.partition("/")
            if name not in destinations:
                continue
            if rest:
                _extract(archive, inner.replace(name=rest, deep=False), destinations[name])
            elif inner.isdir():
                found.add(name)
    return found


def _destination(destination: Path) -> None:
    if destination.is_symlink():
        raise AgevalError(
            "unsafe_path", f"{destination} is a symlink: nothing is written through it"
        )
    destination.mkdir(parents=True, exist_ok=True)


def _extract(archive: tarfile.TarFile, member: tarfile.TarInfo, destination: Path) -> None:
    if member.issym() and _link_escapes(member):
        _place_symlink(member, destination)
        return
    try:
        archive.extract(member, destination, filter="data")
    except tarfile.FilterError as exc:
        raise AgevalError("unsafe_archive", f"refused archive member: {exc}") from None


class ChunkReader(io.RawIOBase):
    """A file-like reader over an iterator of byte chunks (the Docker SDK's archive stream)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._pending:
            try:
                self._pending = memoryview(next(self._chunks))
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size
