"""Lineage: the fork and replay branches of a dataset's graph, and where each one grew from.

A fork is a run node whose key holds the source checkpoint's key; a replay is a `replay` node
whose parents are the source's run node and its last checkpoint. Every branch that was computed
or reused is recorded beside the dataset, under `.ageval/graph/branches/`, like the node
journal: never part of a key, and losing it only loses the drawing. `ageval graph show` reads
the records back and hangs each branch under the run (or branch) whose checkpoint it starts
from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from agevalx.cache.store import CacheStore
from agevalx.fsutil import write_if_changed
from agevalx.graph.nodes import Node, Status
from agevalx.hashing import canonical_json
from agevalx.results.paths import attempt_dir, attempt_id

if TYPE_CHECKING:
    from agevalx.runner.activity import ActivityRecord

BRANCHES_DIR = ".ageval/graph/branches"
BranchKind = Literal["fork", "replay"]
NODE_KIND: dict[BranchKind, str] = {"fork": "run", "replay": "replay"}
"""The cached node kind behind each branch kind."""


class Branch(BaseModel):
    """One record under `.ageval/graph/branches/`: a fork or a replay and its origin."""

    model_config = ConfigDict(extra="forbid")

    kind: BranchKind
    """`fork` (a run node started from a checkpoint) or `replay` (a replay node)."""
    id: str
    """The fork's attempt id or the replay id: its evidence is under `.ageval/runs/<id>/`."""
    node: str
    """The branch node's identity: `run:<task>#<attempt>` or `replay:<task>`."""
    key: str
    """The branch node's key."""
    task_id: str
    """The task of the source attempt (and of the branch)."""
    source_attempt: str
    """The attempt the branch grew from (itself unchanged)."""
    checkpoint_seq: int | None
    """The source checkpoint's seq in the source's activity.jsonl; None when it took none."""
    checkpoint_key: str | None
    """The source checkpoint node's key: the branch's parent."""
    parent_run_key: str | None
    """The source attempt's run node key."""
    models: dict[str, str | None] = {}
    """A fork's role -> model id."""
    evaluate: bool | None = None
    """A replay's `--evaluate`."""


class BranchView(Branch):
    """A branch as `ageval graph show` lists it."""

    status: Status
    """`hit` when the branch node is in the cache."""
    parent_node: str | None = None
    """The planned run node the branch grew from, when the source run is in this plan."""


def _path(dataset_root: Path, branch: Branch) -> Path:
    return dataset_root / BRANCHES_DIR / f"{branch.kind}-{branch.key}.json"


def record_branch(dataset_root: Path, branch: Branch) -> None:
    data = canonical_json(branch.model_dump(mode="json"))
    path = _path(dataset_root, branch)
    write_if_changed(path, data)


def recorded_branches(dataset_root: Path) -> list[Branch]:
    """Every readable branch record of the dataset (a damaged one is skipped)."""
    found = []
    for path in sorted((dataset_root / BRANCHES_DIR).glob("*.json")):
        try:
            found.append(Branch.model_validate_json(path.read_bytes()))
        except (OSError, ValidationError):
            continue
    return found


def recorded_node_key(dataset_root: Path, attempt: str, kind: str) -> str | None:
    """The key of the `kind` node an attempt's result.json names; None when it names none."""
    path = attempt_dir(dataset_root, attempt) / "result.json"
    try:
        document: Any = json.loads(path.read_bytes())
        nodes = document.get("nodes", []) if isinstance(document, dict) else []
        return next(str(n["key"]) for n in nodes if isinstance(n, dict) and n.get("kind") == kind)
    except (OSError, ValueError, StopIteration, KeyError, TypeError):
        return None


def source_run_key(dataset_root: Path, attempt: str) -> str | None:
    """The run node key of an attempt, from its result.json, else its attempt.json."""
    directory = attempt_dir(dataset_root, attempt)
    recorded = recorded_node_key(dataset_root, attempt, "run")
    if recorded is None:
        # The recovery journal (and the Docker owners it checks) only for a run without a
        # result: `ageval graph show` of a finished dataset needs no engine.
        from agevalx.runner.recovery import read_attempt

        previous = read_attempt(directory)
        return previous.run_key if previous is not None else None
    return recorded


def _models(node: Node) -> dict[str, str | None]:
    roles = node.inputs.get("lock_fields", {}).get("binding.roles") or {}
    return {role: ((profile or {}).get("model") or {}).get("id") for role, profile in roles.items()}


def fork_branch(dataset_root: Path, node: Node) -> Branch | None:
    """The branch record of a forked run node (None for any other node)."""
    fork = node.payload.get("fork")
    if node.kind != "run" or not fork or node.task_id is None:
        return None
    records: list[ActivityRecord] = fork.get("records", [])
    return Branch(
        kind="fork",
        id=attempt_id(node),
        node=node.id,
        key=node.key,
        task_id=node.task_id,
        source_attempt=fork["source"],
        checkpoint_seq=records[-1].seq if records else None,
        checkpoint_key=fork["checkpoint"],
        parent_run_key=source_run_key(dataset_root, fork["source"]),
        models=_models(node),
    )


def branches(
    dataset_root: Path, task_ids: tuple[str, ...], planned: list[Node], store: CacheStore
) -> list[BranchView]:
    """The recorded branches of `task_ids`, with their cache status and planned source run."""
    runs = {node.key: node.id for node in planned if node.kind == "run"}
    views = [
        BranchView(
            **branch.model_dump(),
            status="hit" if store.get_action(NODE_KIND[branch.kind], branch.key) else "miss",
            parent_node=runs.get(branch.parent_run_key or ""),
        )
        for branch in recorded_branches(dataset_root)
        if branch.task_id in task_ids
    ]
    return sorted(
        views,
        key=lambda v: (v.task_id, v.source_attempt, v.checkpoint_seq or -1, v.kind, v.id),
    )


@dataclass
class Lineage:
    """Branches arranged as trees: each root is a source attempt that is not a branch itself."""

    roots: list[str] = field(default_factory=list)
    """Source attempts at the top, in order."""
    children: dict[str, list[BranchView]] = field(default_factory=dict)
    """Branches by the attempt they grew from (a fork's own forks and replays nest under it)."""

    def source(self, attempt: str) -> BranchView:
        """A branch of the root `attempt`: it names the root's run key and planned node."""
        return self.children[attempt][0]


def lineage(views: list[BranchView]) -> Lineage:
    tree = Lineage()
    branch_ids = {view.id for view in views}
    for view in views:
        tree.children.setdefault(view.source_attempt, []).append(view)
        if view.source_attempt not in branch_ids and view.source_attempt not in tree.roots:
            tree.roots.append(view.source_attempt)
    return tree
