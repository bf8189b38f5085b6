"""Paging large JSON Lines files (a transcript can be 50 MB) without reading them whole.

A file is cut into spans of about `PAGE_BYTES`, each ending at a line break, by seeking:
finding the pages reads one line per page, not the file. A line longer than `LINE_LIMIT` is
not parsed; only its start is kept, and the page links to the raw file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

PAGE_BYTES = 512 * 1024
LINE_LIMIT = 1024 * 1024
EXCERPT_BYTES = 4096
_SCAN = 64 * 1024


@dataclass(frozen=True)
class Span:
    """Bytes [start, end) of a file: whole lines."""

    start: int
    end: int


@dataclass(frozen=True)
class Line:
    """One line of a page: its parsed JSON value, or an excerpt when it is not shown whole."""

    value: Any
    excerpt: str | None
    """Set when the line is too long or not JSON: its first bytes, as text."""
    size: int


def page_spans(path: Path, page_bytes: int = PAGE_BYTES) -> list[Span]:
    """The file's pages, in order; one empty page for an empty file."""
    size = path.stat().st_size
    spans: list[Span] = []
    with path.open("rb") as handle:
        start = 0
        while start < size:
            end = _line_end(handle, start + page_bytes, size)
            spans.append(Span(start, end))
            start = end
    return spans or [Span(0, 0)]


def _line_end(handle: BinaryIO, position: int, size: int) -> int:
    """The offset just past the first line break at or after `position - 1` (or the end)."""
    if position >= size:
        return size
    handle.seek(position - 1)
    offset = position - 1
    while chunk := handle.read(_SCAN):
        found = chunk.find(b"\n")
        if found >= 0:
            return offset + found + 1
        offset += len(chunk)
    return size


def read_page(path: Path, span: Span) -> list[Line]:
    """The lines of one page, parsed."""
    with path.open("rb") as handle:
        handle.seek(span.start)
        data = handle.read(span.end - span.start)
    return [_line(raw) for raw in data.split(b"\n") if raw.strip()]


def _line(raw: bytes) -> Line:
    if len(raw) > LINE_LIMIT:
        return Line(None, raw[:EXCERPT_BYTES].decode("utf-8", "replace"), len(raw))
    try:
        return Line(json.loads(raw), None, len(raw))
    except ValueError:
        return Line(None, raw[:EXCERPT_BYTES].decode("utf-8", "replace"), len(raw))
