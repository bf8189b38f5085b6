"""Node keys: xxh3-128 over canonical JSON of the key schema, the ageval release, kind, rule
version, inputs and parent keys. Pure functions; golden tests pin their values."""

from __future__ import annotations

from functools import cache, lru_cache
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from agevalx.cache.globs import PathFilter
from agevalx.graph.rules import FileSelection, Rule
from agevalx.hashing import canonical_json, digest_bytes

KEY_SCHEMA = 2
"""2: the ageval release entered every key."""


def _release() -> str:
    try:
        return version("agevalx")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


AGEVAL_VERSION = _release()
"""The release of the code that computes every node: a key made by another release differs,
so a cache shared between machines never mixes the outputs of two releases."""


def key_material(
    rule: Rule, inputs: dict[str, Any], parents: dict[str, list[str]]
) -> dict[str, Any]:
    """The exact document whose digest is the node key."""
    parent_keys = {kind: sorted(keys) for kind, keys in sorted(parents.items())}
    return _document(AGEVAL_VERSION, rule.kind, rule.version, inputs, parent_keys)


def _document(release: str, kind: str, version: int, inputs: Any, parents: Any) -> dict[str, Any]:
    return {
        "key_schema": KEY_SCHEMA,
        "ageval": release,
        "kind": kind,
        "rule_version": version,
        "inputs": inputs,
        "parents": parents,
    }


def node_key(
    rule: Rule,
    inputs: dict[str, Any],
    parents: dict[str, list[str]],
    encoded_inputs: bytes | None = None,
) -> str:
    """The digest of `key_material`'s canonical JSON. `encoded_inputs`, when given, is
    `canonical_json(inputs)` already made (the planner joins it from parts it serialises
    once per task)."""
    if encoded_inputs is None:
        encoded_inputs = canonical_json(inputs)
    return digest_bytes(key_bytes(rule, encoded_inputs, parents))


def key_bytes(rule: Rule, encoded_inputs: bytes, parents: dict[str, list[str]]) -> bytes:
    """`canonical_json(key_material(rule, inputs, parents))` from the inputs' canonical JSON."""
    head, middle, tail = _frame(AGEVAL_VERSION, rule.kind, rule.version)
    parent_keys = {kind: sorted(keys) for kind, keys in sorted(parents.items())}
    return b"".join((head, encoded_inputs, middle, canonical_json(parent_keys), tail))


_HOLE = "\x00"
"""A value no kind or release holds; canonical JSON writes it as `"\\u0000"`."""


@cache
def _frame(release: str, kind: str, version: int) -> tuple[bytes, bytes, bytes]:
    """The canonical key document of a rule around its inputs and parents: the bytes before
    the inputs, between them and the parents, and after the parents (sorted members put the
    inputs before the parents)."""
    document = canonical_json(_document(release, kind, version, _HOLE, _HOLE))
    head, middle, tail = document.split(canonical_json(_HOLE))
    return head, middle, tail


@cache
def _path_filter(include: tuple[str, ...], exclude: tuple[str, ...]) -> PathFilter:
    return PathFilter(include, exclude)


def select_files(files: dict[str, str], selection: FileSelection) -> dict[str, str]:
    """The subset of `{path: digest}` that a rule's globs select."""
    kept = _kept_paths(tuple(files), tuple(selection.include), tuple(selection.exclude))
    return {path: files[path] for path in kept}


@lru_cache(maxsize=8192)
def _kept_paths(
    paths: tuple[str, ...], include: tuple[str, ...], exclude: tuple[str, ...]
) -> tuple[str, ...]:
    """The paths a selection keeps, matched once per set of paths: the tasks of a dataset
    mostly share one layout."""
    path_filter = _path_filter(include, exclude)
    return tuple(path for path in paths if path_filter.keeps(path))


def lock_field(document: dict[str, Any], dotted: str) -> Any:
    """The value at a dotted path of the lock document, or None where it does not exist."""
    value: Any = document
    for part in _parts(dotted):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


@lru_cache(maxsize=1024)
def _parts(dotted: str) -> tuple[str, ...]:
    """A dotted path's names, split once: a plan reads a few fields of every task's lock."""
    return tuple(dotted.split("."))
