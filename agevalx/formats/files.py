"""A task directory's files and their digests, as a lock records them (in every format)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agevalx.cache.tree import IGNORED_NAMES
from agevalx.errors import ConfigError
from agevalx.hashing import digest_bytes, digest_file

FileDigester = Callable[[Path, os.stat_result], str]


class FileEntry(BaseModel):
    """One file of a task tree, as the lock records it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    digest: str
    """xxh3-128 of the bytes (for a symlink: of its target text)."""

    size: int
    """Size in bytes."""

    executable: bool = False
    """Whether the owner execute bit is set."""

    symlink: str | None = None
    """The link target, for a symlink that stays inside the task."""


def _default_digester(path: Path, _: os.stat_result) -> str:
    return digest_file(path)


def _symlink_entry(path: Path, root: Path, relative: str, display: str) -> FileEntry:
    target = os.readlink(path)
    resolved = os.path.realpath(path.parent / target)  # never raises, even on a loop
    inside = resolved == os.path.realpath(root) or resolved.startswith(
        os.path.realpath(root) + os.sep
    )
    if os.path.isabs(target) or not inside:
        raise ConfigError(
            "path_escape",
            f"the symlink {relative} points outside the task ({target})",
            file=f"{display}/{relative}",
            hint="copy the file into the task instead of linking to it",
        )

    return FileEntry(digest=digest_bytes(target.encode()), size=len(target), symlink=target)


def task_files(
    task_dir: Path, display: str, digester: FileDigester = _default_digester
) -> dict[str, FileEntry]:
    """Every file of the task, by relative posix path, sorted; symlinks are never followed."""
    entries: dict[str, FileEntry] = {}
    for current, dirnames, filenames in os.walk(task_dir, followlinks=False):
        dirnames[:] = sorted(name for name in dirnames if name not in IGNORED_NAMES)
        base = Path(current)
        for name in [*filenames, *(d for d in dirnames if (base / d).is_symlink())]:
            if name in IGNORED_NAMES:
                continue
            path = base / name
            relative = path.relative_to(task_dir).as_posix()
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                entries[relative] = _symlink_entry(path, task_dir, relative, display)
            elif stat.S_ISREG(info.st_mode):
                entries[relative] = FileEntry(
                    digest=digester(path, info),
                    size=info.st_size,
                    executable=bool(info.st_mode & stat.S_IXUSR),
                )
            else:
                raise ConfigError(
                    "unsupported_file_type",
                    f"{relative} is not a regular file, directory or symlink",
                    file=f"{display}/{relative}",
                    hint="remove sockets, pipes and device files from the task",
                )
    return dict(sorted(entries.items()))
