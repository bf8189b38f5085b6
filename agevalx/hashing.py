"""Content digests and canonical JSON: the two primitives every key is built from.

Digests are xxh3-128 written as 32 lowercase hex characters. Canonical JSON is UTF-8 with
sorted keys and fixed separators, so equal values always hash equally.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import xxhash

ALGORITHM = "xxh3-128"
_CHUNK = 1 << 20


_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)
"""One encoder for every call: `json.dumps` with these options builds a new one each time,
which cost more than encoding a key's small inputs."""


def _one_shot_encoder() -> Callable[[Any, int], list[str]] | None:
    """The C encoder `_CANONICAL.encode` makes on every call (with its Python layers around
    it: `encode`, `iterencode`, a `floatstr` closure), made once: a plan encodes a few small
    values per node, and those layers cost more than the encoding. None where the C
    accelerator is missing. It keeps no circular-reference markers (a marker left by a call
    that raised would refuse a later value): a cyclic value raises RecursionError instead."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return None
    encoder: Callable[[Any, int], list[str]] = make(
        None,
        _CANONICAL.default,
        json.encoder.encode_basestring,
        None,
        _CANONICAL.key_separator,
        _CANONICAL.item_separator,
        True,
        False,
        False,
    )
    return encoder


_ONE_SHOT = _one_shot_encoder()


def canonical_json(value: Any) -> bytes:
    """Serialise `value` canonically: sorted keys, no whitespace, UTF-8, no NaN."""
    if _ONE_SHOT is None:
        return _CANONICAL.encode(value).encode("utf-8")
    return "".join(_ONE_SHOT(value, 0)).encode("utf-8")


def canonical_members(members: Mapping[str, bytes]) -> bytes:
    """`canonical_json` of an object whose member values are given already serialised
    canonically: the same bytes, without serialising those values again."""
    parts = (b"%s:%s" % (_member_name(name), members[name]) for name in sorted(members))
    return b"{" + b",".join(parts) + b"}"


@lru_cache(maxsize=1024)
def _member_name(name: str) -> bytes:
    return canonical_json(name)


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
