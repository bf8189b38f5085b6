"""Which paths the agent may touch through the client's `fs/*` and `terminal/*` methods.

The check is lexical: `..` is resolved, symlinks are not (the container itself is the
sandbox; this rule keeps the agent's requests inside the attempt's own folders).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

from agevalx.agents.base import Container


class PathRefused(Exception):
    """A requested path lies outside the allowed roots (or is malformed)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path!r}: {reason}")
        self.path = path
        self.reason = reason


def allowed_roots(container: Container) -> tuple[str, ...]:
    """The agent's workspace, its HOME and /tmp."""
    return (container.workdir, container.home, "/tmp")


def normalize(path: str, cwd: str) -> str:
    """`path` made absolute against `cwd`, with `.` and `..` resolved."""
    if "\0" in path:
        raise PathRefused(path, "contains a NUL byte")
    joined = posixpath.normpath(posixpath.join(cwd, path))
    return "/" + joined.lstrip("/")


def is_inside(path: str, root: str) -> bool:
    """Whether the normalized `path` is `root` or lies below it."""
    root = normalize(root, "/")
    return path == root or path.startswith(root.rstrip("/") + "/")


def resolve_allowed(path: str, cwd: str, roots: Iterable[str]) -> str:
    """The normalized `path`, or `PathRefused` when it escapes every root."""
    resolved = normalize(path, cwd)
    roots = tuple(roots)
    if not any(is_inside(resolved, root) for root in roots):
        raise PathRefused(path, f"outside the allowed roots {', '.join(roots)}")
    return resolved
