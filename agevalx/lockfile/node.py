"""The lock node's executor and the lock files written as views of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agevalx.cache.manifest import OutputRef
from agevalx.fsutil import write_if_changed
from agevalx.graph.context import ExecutionContext, NodeResult
from agevalx.graph.nodes import Node
from agevalx.graph.plan import Plan
from agevalx.graph.registry import node_executor
from agevalx.hashing import canonical_json
from agevalx.lockfile.models import TaskLock, parse_lock

LOCK_DIR = ".ageval/locks"


def lock_bytes(document: dict[str, Any]) -> bytes:
    return canonical_json(document) + b"\n"


@node_executor("lock")
def execute_lock(node: Node, context: ExecutionContext) -> NodeResult:
    """Store the lock document (resolved while planning) as the node's output blob."""
    document = node.payload["lock"]
    digest = context.store.put_bytes(lock_bytes(document))
    return NodeResult(
        outputs={"lock": OutputRef(digest=digest, type="blob")},
        meta={"task_id": node.task_id, "config_digest": document["config_digest"]},
    )


def lock_path(dataset_root: Path, task_id: str) -> Path:
    return dataset_root / LOCK_DIR / f"{task_id}.lock.json"


def write_lock_view(dataset_root: Path, node: Node) -> Path:
    """Write `.ageval/locks/<task>.lock.json`, the readable view of a lock node."""
    assert node.task_id is not None
    path = lock_path(dataset_root, node.task_id)
    data = lock_bytes(node.payload["lock"])
    write_if_changed(path, data)
    return path


def task_lock(context: ExecutionContext, task_id: str) -> TaskLock:
    """The planned lock of `task_id` as its model (parsed once per plan)."""
    return planned_lock(context.plan, task_id)


def planned_lock(plan: Plan, task_id: str) -> TaskLock:
    """The lock of a planned task as its model, parsed once per plan (not once per attempt)."""
    payload = plan.node(f"lock:{task_id}").payload
    model = payload.get("lock_model")
    if not isinstance(model, TaskLock):
        model = payload["lock_model"] = parse_lock(payload["lock"])
    return model
