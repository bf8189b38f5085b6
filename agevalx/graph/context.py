"""What an execution shares with its node executors: the context, an executor's result and
the callables the scheduler takes (kept apart from the scheduler, `execute`, so that the
executor registry names their types without importing it)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agevalx.cache.manifest import ActionManifest, OutputRef
from agevalx.cache.store import CacheStore
from agevalx.errors import AgevalError
from agevalx.graph.nodes import Node
from agevalx.graph.plan import Plan


@dataclass(frozen=True)
class NodeResult:
    """What an executor produced for one node."""

    outputs: dict[str, OutputRef]
    meta: dict[str, Any] = field(default_factory=dict)


Executor = Callable[[Node, "ExecutionContext"], NodeResult]
Dispatch = Callable[[Node, "ExecutionContext"], ActionManifest]
"""Computes one missing node and returns its stored action entry: `run_node` here, or a
cluster's dispatcher running it on another machine."""
Retry = Callable[[Node, AgevalError, int], bool]
"""Whether a node that failed with this error, after this many tries, is computed again."""
Admit = Callable[[Node], AgevalError | None]
"""None to let a node start, else why it is held back (it ends `skipped`)."""


@dataclass
class ExecutionContext:
    """Shared by every executor of one execution."""

    plan: Plan
    store: CacheStore
    results: dict[str, ActionManifest] = field(default_factory=dict)
    """Action entries of finished nodes, by node id."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    placements: dict[str, str] = field(default_factory=dict)
    """Where a dispatcher ran a node (a cluster's node id), by node id."""
    retries: dict[str, str] = field(default_factory=dict)
    """Why a dispatcher ran a node a second time (an infrastructure failure), by node id."""

    def parent_results(self, node: Node) -> list[ActionManifest]:
        with self.lock:
            return [self.results[p] for p in self.plan.parents(node.id)]

    def parent_result(self, node: Node, kind: str) -> ActionManifest:
        """The finished parent of `kind`; a missing one is a coded failure of `node`."""
        for parent in self.parent_results(node):
            if parent.kind == kind:
                return parent
        raise AgevalError("missing_parent", f"{node.id} has no {kind} parent result")
