"""Why a node is stale: compare its current inputs with the last ones recorded for its identity."""

from __future__ import annotations

from typing import Any

from agevalx.graph.journal import last_recorded
from agevalx.graph.plan import Plan


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        flat: dict[str, Any] = {}
        for key, child in value.items():
            flat.update(_flatten(child, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix: value}


def diff_inputs(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """Leaf-level changes between two input records, sorted by path."""
    old, new = _flatten(before), _flatten(after)
    changes = []
    for path in sorted(old.keys() | new.keys()):
        if old.get(path, _MISSING) != new.get(path, _MISSING):
            changes.append(
                {
                    "input": path,
                    "before": old.get(path),
                    "after": new.get(path),
                    "change": "added"
                    if path not in old
                    else "removed"
                    if path not in new
                    else "changed",
                }
            )
    return changes


_MISSING = object()


def explain(plan: Plan, name: str) -> dict[str, Any]:
    """The node's status and, when its key moved, which inputs and parents changed."""
    node = plan.node(name)
    last = last_recorded(plan.dataset.root, name)
    report: dict[str, Any] = {
        "id": node.id,
        "kind": node.kind,
        "key": node.key,
        "status": node.status,
        "last_key": last["key"] if last else None,
    }
    if last is None:
        report["reason"] = "never computed for this identity"
        report["changes"] = []
        return report
    if last["key"] == node.key:
        report["reason"] = "up to date" if node.status == "hit" else "same key, output missing"
        report["changes"] = []
        return report
    report["reason"] = "inputs changed"
    report["changes"] = diff_inputs(last.get("inputs", {}), node.inputs)
    parents = []
    for parent in plan.parents(name):
        parent_node = plan.node(parent)
        old_keys = last.get("parents", {}).get(parent_node.kind, [])
        if parent_node.key not in old_keys:
            parents.append(explain(plan, parent))
    report["parents"] = parents
    return report
