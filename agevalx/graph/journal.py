"""The node journal: the last key and inputs recorded for each node identity of a dataset.

`ageval graph explain` compares a node's current inputs with this record to say which input
changed. It lives beside the dataset (`.ageval/graph/`), is never part of a key, and losing
it only loses explanations.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agevalx.fsutil import write_if_changed
from agevalx.graph.nodes import Node
from agevalx.hashing import canonical_json, digest_bytes

JOURNAL_DIR = ".ageval/graph"


def _path(dataset_root: Path, identity: str) -> Path:
    kind = identity.split(":", 1)[0]
    # One join: a run records every node, and each `/` parses its operand again.
    return dataset_root.joinpath(JOURNAL_DIR, kind, f"{digest_bytes(identity.encode())}.json")


def record(dataset_root: Path, node: Node) -> Path:
    """Record a finished node's inputs under its identity; the journal file."""
    entry = {"id": node.id, "key": node.key, "inputs": node.inputs, "parents": node.parents}
    data = canonical_json(entry)
    path = _path(dataset_root, node.id)
    write_if_changed(path, data)
    return path


def last_recorded(dataset_root: Path, identity: str) -> dict[str, Any] | None:
    try:
        entry = json.loads(_path(dataset_root, identity).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("id") != identity:
        return None
    return entry
