"""Content digests and canonical JSON: the two primitives every key is built from.

Digests are xxh3-128 written as 32 lowercase hex characters. Canonical JSON is UTF-8 with
sorted keys and fixed separators, so equal values always hash equally.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import xxhash

ALGORITHM = "xxh3-128"
_CHUNK = 1 << 20


def canonical_json(value: Any) -> bytes:
    """Serialise `value` canonically: sorted keys, no whitespace, UTF-8, no NaN."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def digest_bytes(data: bytes) -> str:
    return xxhash.xxh3_128_hexdigest(data)


def digest_json(value: Any) -> str:
    return digest_bytes(canonical_json(value))


def digest_file(path: Path) -> str:
    """Digest a regular file's bytes, streaming it in 1 MiB chunks."""
    hasher = xxhash.xxh3_128()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            hasher.update(chunk)
    return hasher.hexdigest()
