"""Bounded reading of container streams: output tails, archive chunks, capped copies."""

from __future__ import annotations

import io
import tarfile

import pytest

from agevalx.environments.archive import ChunkReader
from agevalx.environments.container import bounded_tail, copy_bounded

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
