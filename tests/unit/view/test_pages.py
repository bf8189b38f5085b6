"""Large JSON Lines files are cut into pages at line breaks, and huge lines are not parsed."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from agevalx.view.pages import EXCERPT_BYTES, LINE_LIMIT, page_spans, read_page

pytestmark = pytest.mark.unit


def write_lines(path: Path, count: int, width: int) -> list[dict[str, object]]:
    entries = [{"n": n, "text": "x" * width} for n in range(count)]
    path.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    return entries


def test_pages_cover_the_file_in_order_and_end_at_line_breaks(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    entries = write_lines(path, 500, 300)

    spans = page_spans(path, page_bytes=10_000)
    data = path.read_bytes()

    assert len(spans) > 10
    assert spans[0].start == 0 and spans[-1].end == len(data)
    assert all(a.end == b.start for a, b in itertools.pairwise(spans))
    assert all(data[span.end - 1 : span.end] == b"\n" for span in spans)
    assert [line.value for span in spans for line in read_page(path, span)] == entries


def test_a_page_of_a_50_megabyte_file_is_about_the_page_size(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    line = json.dumps({"text": "y" * 1000}).encode() + b"\n"
    with path.open("wb") as handle:
        for _ in range(50_000):
            handle.write(line)

    spans = page_spans(path)

    assert len(spans) == pytest.approx(path.stat().st_size / (512 * 1024), abs=1)
    assert len(read_page(path, spans[17])) == pytest.approx(512 * 1024 / len(line), abs=2)


def test_a_line_longer_than_the_limit_is_kept_as_an_excerpt(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    huge = json.dumps({"text": "z" * (LINE_LIMIT + 10)})
    path.write_text('{"n": 1}\n' + huge + "\nnot json\n")

    lines = [line for span in page_spans(path) for line in read_page(path, span)]

    assert lines[0].value == {"n": 1} and lines[0].excerpt is None
    assert lines[1].value is None and lines[1].size == len(huge)
    assert lines[1].excerpt is not None and len(lines[1].excerpt) == EXCERPT_BYTES
    assert (lines[2].value, lines[2].excerpt) == (None, "not json")


def test_an_empty_file_has_one_empty_page(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")

    (span,) = page_spans(path)

    assert read_page(path, span) == []
