"""Bounded reading of container streams: output tails, archive chunks, capped copies."""

from __future__ import annotations

import io
import itertools
import tarfile
from collections.abc import Iterator

import pytest

from agevalx.environments.archive import ChunkReader
from agevalx.environments.container import (
    OUTPUT_LIMIT,
    _read_until,
    bounded_tail,
    copy_bounded,
)

pytestmark = pytest.mark.unit


def test_the_tail_of_a_long_stream_is_its_last_bytes() -> None:
    chunks = (bytes([index % 256]) * 1000 for index in range(5000))
    tail = bounded_tail(chunks, 2500)
    assert (
        tail == bytes([4997 % 256]) * 500 + bytes([4998 % 256]) * 1000 + bytes([4999 % 256]) * 1000
    )
    assert bounded_tail(iter([b"short"]), 2500) == b"short"
    assert bounded_tail(iter([b"abc"]), 0) == b""


def test_a_tar_streamed_in_odd_chunks_reads_back_whole() -> None:
    buffer = io.BytesIO()
    payload = bytes(range(256)) * 4000
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        info = tarfile.TarInfo("file")
        info.size = len(payload)
        archive.addfile(info, io.BytesIO(payload))
    data = buffer.getvalue()
    chunks = (data[start : start + 7777] for start in range(0, len(data), 7777))
    with tarfile.open(fileobj=ChunkReader(chunks), mode="r|") as archive:
        member = archive.next()
        assert member is not None
        handle = archive.extractfile(member)
        assert handle is not None
        out = io.BytesIO()
        copy_bounded(handle, out, 1000)
        assert out.getvalue() == payload[:1000]
        assert handle.read() == payload[1000:]


def _never() -> Iterator[bytes]:
    raise AssertionError("read past the marked line")
    yield b""  # pragma: no cover


def test_reading_stops_at_the_end_of_the_marked_line_split_across_chunks() -> None:
    chunks = itertools.chain(
        [b"printed by the evaluator\n", b"ageval-res", b'ult-x {"status":', b' "PASS"}'],
        [b"\n", b"more"],
        _never(),
    )
    kept, seen = _read_until(chunks, b"ageval-result-x")
    assert seen and kept == b'printed by the evaluator\nageval-result-x {"status": "PASS"}\n'


def test_without_the_mark_the_stream_is_read_to_its_end_and_its_tail_kept() -> None:
    flood = [b"x" * 1000 + b"\n"] * 3000  # 3 MB of lines, none marked
    kept, seen = _read_until(iter([*flood, b"\nageval-result-x {}"]), b"ageval-result-x")
    assert not seen and len(kept) == OUTPUT_LIMIT and kept.endswith(b"\nageval-result-x {}")
    # a mark inside a line is no marked line
    kept, seen = _read_until(iter([b"say ageval-result-x {}\n"]), b"ageval-result-x")
    assert not seen
    assert _read_until(iter([b"a", b"b"]), None) == (b"ab", False)
