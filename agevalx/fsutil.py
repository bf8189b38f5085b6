"""Small filesystem helpers shared by every writer: atomic, durable file replacement, and
directories that no symlink can redirect.

A dataset is untrusted input: one that ships `.ageval` (or anything below it) as a symlink
would redirect ageval's writes anywhere on the host. Every write under a `.ageval` directory
goes through `make_dirs`, which follows no symlink from that directory down.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from agevalx.errors import AgevalError

STATE_DIR = ".ageval"
"""The directory of results, locks and journals beside a dataset."""


RACY_WINDOW_NS = 2_000_000_000
"""How close to a moment a file's change must be to be too close to trust its state then (git's
"racily clean" files: timestamps are as coarse as the kernel's clock tick)."""

FileState = tuple[int, int, int, int, int]
"""What a witness of a path records (the view stamp, the plan memo): inode, size, mode,
mtime_ns and ctime_ns. A write changes the ctime, which only root can set back."""


def file_state(info: os.stat_result) -> FileState:
    return (info.st_ino, info.st_size, info.st_mode, info.st_mtime_ns, info.st_ctime_ns)


def _state_start(path: Path) -> int | None:
    """The index of the last `.ageval` component of `path`, if it has one."""
    parts = path.parts
    found = [index for index, part in enumerate(parts) if part == STATE_DIR]
    return found[-1] if found else None


def _refuse_link(path: Path, root: Path) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise AgevalError(
            "unsafe_path",
            f"{path} is a symlink or a file where ageval writes a directory",
            file=str(path),
            hint=f"ageval follows no symlink under {root}; remove it",
        )


def make_dirs(path: Path, root: Path | None = None) -> Path:
    """`mkdir -p path`, following no symlink from `root` down (default: from the path's
    `.ageval` component, or not checked for a path without one). Returns `path`."""
    if root is None:
        start = _state_start(path)
        if start is None:
            path.mkdir(parents=True, exist_ok=True)
            return path
        root = Path(*path.parts[:start])
        parts: Iterable[str] = path.parts[start:]
    else:
        parts = path.relative_to(root).parts
    root.mkdir(parents=True, exist_ok=True)
    current = root
    for part in parts:
        current = current / part
        _refuse_link(current, root)
        try:
            os.mkdir(current)
        except FileExistsError:
            _refuse_link(current, root)
    return path


def open_inside(root: Path, target: Path) -> BinaryIO:
    """A new file `target` under `root`, open for writing: no component between them may be a
    symlink, and an existing file or link at `target` is replaced, never followed."""
    make_dirs(target.parent, root)
    try:
        os.unlink(target)
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        raise AgevalError("unsafe_path", f"{target} is a directory") from None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    return os.fdopen(os.open(target, flags, 0o644), "wb")


def write_inside(root: Path, target: Path, data: Iterable[bytes]) -> None:
    """Write `data` (chunks) to a new file `target` under `root` (see `open_inside`)."""
    with open_inside(root, target) as stream:
        for chunk in data:
            stream.write(chunk)


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` so that readers see the old file or the new one, never half."""
    make_dirs(path.parent)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def write_if_changed(path: Path, data: bytes) -> bool:
    """`atomic_write`, unless `path` is a regular file that holds `data` already: a run whose
    nodes were all reused rewrites none of its views (each write costs two fsyncs). Returns
    whether it wrote."""
    if holds(path, data):
        return False
    atomic_write(path, data)
    return True


def holds(path: Path, data: bytes) -> bool:
    """Whether `path` is a regular file, not a link, whose bytes are `data`."""
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size != len(data):
            return False
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        found = b""
        while chunk := os.read(descriptor, len(data) + 1 - len(found)):
            found += chunk
            if len(found) > len(data):
                break
    except OSError:
        return False
    finally:
        os.close(descriptor)
    return found == data


def read_limited(path: Path, limit: int, *, display: str | None = None) -> bytes:
    """The bytes of a regular file no larger than `limit`; anything else (a device, a fifo,
    a directory, a file too large) is refused before it is read."""
    shown = display or str(path)
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise AgevalError(
            "unreadable_file", f"cannot read {shown}: {exc.strerror}", file=shown
        ) from None
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise AgevalError(
                "not_a_regular_file",
                f"{shown} is not a regular file",
                file=shown,
                hint="replace it with a regular file (devices, fifos and sockets are refused)",
            )
        if info.st_size > limit:
            raise AgevalError(
                "file_too_large",
                f"{shown} is {info.st_size} bytes; at most {limit} are read",
                file=shown,
            )
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise AgevalError("file_too_large", f"{shown} grew past {limit} bytes", file=shown)
    return data
