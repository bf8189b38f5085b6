"""Include/exclude globs over relative POSIX paths.

`*` and `?` match within one path component, `[...]` is a character class, and a `**`
component matches any number of components (zero included). A pattern that matches a
directory applies to everything under it, as in `.gitignore`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from agevalx.cache.errors import CacheError
from agevalx.cache.manifest import relative_path_problem


def glob_regex(pattern: str) -> str:
    """Translate one glob into a regular expression matching whole relative paths."""
    cleaned = pattern.rstrip("/")
    problem = relative_path_problem(cleaned)
    if problem:
        raise CacheError(
            "cache_invalid_glob",
            f"glob {pattern!r}: {problem}",
            hint="globs are relative POSIX paths such as 'src/**/*.py'",
        )
    parts = cleaned.split("/")
    out: list[str] = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]*/)*")
        else:
            out.append(_component_regex(part) + ("" if last else "/"))
    return "".join(out)


def _component_regex(part: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(part):
        char = part[index]
        index += 1
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := _class_end(part, index)) > 0:
            out.append(_class_regex(part[index:end]))
            index = end + 1
        else:
            out.append(re.escape(char))
    return "".join(out)


def _class_end(part: str, start: int) -> int:
    """Index of the `]` closing a class opened just before `start`, or -1."""
    index = start + 1 if part[start : start + 1] in ("!", "^") else start
    index += 1 if part[index : index + 1] == "]" else 0
    return part.find("]", index)


def _class_regex(body: str) -> str:
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    escaped = body.replace("\\", "\\\\").replace("[", "\\[")
    return f"(?!/)[{'^' if negate else ''}{escaped}]"


class PathFilter:
    """Decides which relative paths a tree keeps."""

    def __init__(
        self, include: Sequence[str] | None = None, exclude: Sequence[str] | None = None
    ) -> None:
        self._include_all = include is None
        self._include = _combine(tuple(include or ()))
        self._exclude = _combine(tuple(exclude or ()))

    def excludes(self, path: str) -> bool:
        """True if an exclude glob matches `path` itself (callers prune whole dirs)."""
        return self._exclude is not None and self._exclude.fullmatch(path) is not None

    def includes(self, path: str) -> bool:
        """True if there are no include globs, or one matches `path` or an ancestor."""
        if self._include_all:
            return True
        if self._include is None:
            return False
        prefix = path
        while True:
            if self._include.fullmatch(prefix):
                return True
            prefix, _, _ = prefix.rpartition("/")
            if not prefix:
                return False

    def keeps(self, path: str) -> bool:
        """True if `path` is included and neither it nor an ancestor is excluded."""
        if not self.includes(path):
            return False
        prefix = path
        while prefix:
            if self.excludes(prefix):
                return False
            prefix = prefix.rpartition("/")[0]
        return True


@lru_cache(maxsize=256)
def _combine(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """One regex for a set of globs; memoised, since planning filters every task's tree
    with the same globs."""
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{glob_regex(pattern)})" for pattern in patterns))
