"""Where everything lives under a cache root, and which names are legal there.

Every path the cache builds from a digest, a key, a kind or a ref name goes through the
validators here first, so no name can point outside its area.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from agevalx.cache.errors import CacheError
from agevalx.hashing import ALGORITHM

LAYOUT_VERSION = "ageval-cache 1"
"""The first line of the VERSION file; a reader refuses any other value."""

VERSION_FILE = "VERSION"
INSTANCE_FILE = "INSTANCE"
"""A random id made with the cache: a cache removed and made again at the same path is
another cache (the images labelled for the first are not the second's)."""
LOCK_FILE = "gc.lock"
STAT_CACHE_FILE = "statcache/statcache.db"
"""The stat cache, in a folder of its own: SQLite makes and removes its -wal and -shm files
beside it on every open, which would change the cache root's mtime on every run (a no-op
run's command memo witnesses that root). Caches made before kept it at the root."""
OLD_STAT_CACHE_FILE = "statcache.db"
OBJECTS = "objects"
TREES = "trees"
ACTIONS = "actions"
REFS = "refs"
TMP = "tmp"

DIGEST_RE = re.compile(r"[0-9a-f]{32}")
KIND_RE = re.compile(r"[a-z][a-z0-9_-]*")
REF_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
SHARD_RE = re.compile(r"[0-9a-f]{2}")
REST_RE = re.compile(r"[0-9a-f]{30}")


def check_digest(value: str, what: str = "digest") -> str:
    """Return `value` if it is 32 lowercase hex characters, else raise `cache_invalid_name`."""
    if not isinstance(value, str) or not DIGEST_RE.fullmatch(value):
        raise CacheError(
            "cache_invalid_name",
            f"{what} {value!r} is not 32 lowercase hex characters",
            field=what,
        )
    return value


def check_kind(value: str) -> str:
    """Return `value` if it is a legal action kind (`^[a-z][a-z0-9_-]*$`)."""
    if not isinstance(value, str) or not KIND_RE.fullmatch(value):
        raise CacheError(
            "cache_invalid_name",
            f"kind {value!r} must match ^[a-z][a-z0-9_-]*$",
            field="kind",
        )
    return value


def check_ref_name(value: str) -> str:
    """Return `value` if it is a legal ref name (`^[A-Za-z0-9][A-Za-z0-9._-]*$`)."""
    if not isinstance(value, str) or not REF_NAME_RE.fullmatch(value):
        raise CacheError(
            "cache_invalid_name",
            f"ref name {value!r} must match ^[A-Za-z0-9][A-Za-z0-9._-]*$",
            field="ref",
        )
    return value


def sharded(base: Path, digest: str) -> Path:
    """`base/<first 2 hex>/<remaining 30 hex>` for a validated digest."""
    check_digest(digest)
    # One join, not two: planning builds a path per lookup, and pathlib's joins dominate.
    return base.joinpath(f"{digest[:2]}/{digest[2:]}")


def sharded_name(base: str, digest: str) -> str:
    """`sharded` as a string, for existence checks on many digests."""
    return shard_of(base, check_digest(digest))


def shard_of(base: str, digest: str) -> str:
    """`sharded_name` of a digest already validated (a parsed manifest's, checked by its
    model's pattern)."""
    return f"{base}/{digest[:2]}/{digest[2:]}"


def action_name(actions: str, kind: str, key: str) -> str:
    """`action_path` as a string, under the actions directory `actions`."""
    check_kind(kind)
    return sharded_name(f"{actions}/{kind}", check_digest(key, "key"))


@lru_cache(maxsize=64)
def object_dir(root: Path) -> Path:
    return root / OBJECTS / ALGORITHM


@lru_cache(maxsize=64)
def tree_dir(root: Path) -> Path:
    return root / TREES / ALGORITHM


@lru_cache(maxsize=256)
def _action_dir(root: Path, kind: str) -> Path:
    return root / ACTIONS / check_kind(kind)


def object_path(root: Path, digest: str) -> Path:
    """The file holding the blob named `digest`."""
    return sharded(object_dir(root), digest)


def tree_path(root: Path, digest: str) -> Path:
    """The file holding the tree manifest named `digest`."""
    return sharded(tree_dir(root), digest)


def action_path(root: Path, kind: str, key: str) -> Path:
    """The file holding the action entry for node `key` of `kind`."""
    return sharded(_action_dir(root, kind), check_digest(key, "key"))


def ref_path(root: Path, name: str) -> Path:
    return root / REFS / check_ref_name(name)


def iter_sharded(base: Path) -> Iterator[tuple[str, Path]]:
    """Yield `(name, path)` for every file two levels under `base`.

    `name` is shard + file name; it is a valid digest only for well-formed entries, so
    callers can report stray files instead of skipping them silently.
    """
    if not base.is_dir():
        return
    for shard in sorted(base.iterdir()):
        if shard.is_dir():
            for path in sorted(shard.iterdir()):
                yield shard.name + path.name, path


def iter_action_kinds(root: Path) -> Iterator[str]:
    """Yield the kind names that have an area under `actions/`."""
    base = root / ACTIONS
    if base.is_dir():
        for path in sorted(base.iterdir()):
            if path.is_dir() and KIND_RE.fullmatch(path.name):
                yield path.name
