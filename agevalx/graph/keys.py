"""Node keys: xxh3-128 over canonical JSON of the key schema, the ageval release, kind, rule
version, inputs and parent keys. Pure functions; golden tests pin their values."""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from agevalx.cache.globs import PathFilter
from agevalx.graph.rules import FileSelection, Rule
from agevalx.hashing import digest_json

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
    return {
        "key_schema": KEY_SCHEMA,
        "ageval": AGEVAL_VERSION,
        "kind": rule.kind,
        "rule_version": rule.version,
        "inputs": inputs,
        "parents": {kind: sorted(keys) for kind, keys in sorted(parents.items())},
    }


def node_key(rule: Rule, inputs: dict[str, Any], parents: dict[str, list[str]]) -> str:
    return digest_json(key_material(rule, inputs, parents))


@cache
def _path_filter(include: tuple[str, ...], exclude: tuple[str, ...]) -> PathFilter:
    return PathFilter(include, exclude)


def select_files(files: dict[str, str], selection: FileSelection) -> dict[str, str]:
    """The subset of `{path: digest}` that a rule's globs select."""
    path_filter = _path_filter(tuple(selection.include), tuple(selection.exclude))
    return {path: digest for path, digest in files.items() if path_filter.keeps(path)}


def lock_field(document: dict[str, Any], dotted: str) -> Any:
    """The value at a dotted path of the lock document, or None where it does not exist."""
    value: Any = document
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value
