"""Executing a plan: compute the missing nodes in dependency order with a bounded worker pool.

A node runs once every parent is done. A failed node stops its descendants and nothing else.
Every node is reported as reused, computed, failed or blocked.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Literal

import networkx as nx

from agevalx.cache.manifest import ActionManifest, OutputRef
from agevalx.cache.store import CacheStore
from agevalx.errors import AgevalError
from agevalx.graph.nodes import Node
from agevalx.graph.plan import Plan

Outcome = Literal["reused", "computed", "failed", "blocked"]


@dataclass(frozen=True)
class NodeResult:
    """What an executor produced for one node."""

    outputs: dict[str, OutputRef]
    meta: dict[str, Any] = field(default_factory=dict)


Executor = Callable[[Node, "ExecutionContext"], NodeResult]


@dataclass
class ExecutionContext:
    """Shared by every executor of one execution."""

    plan: Plan
    store: CacheStore
    results: dict[str, ActionManifest] = field(default_factory=dict)
    """Action entries of finished nodes, by node id."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def parent_results(self, node: Node) -> list[ActionManifest]:
        with self.lock:
            return [self.results[p] for p in self.plan.graph.predecessors(node.id)]


@dataclass
class NodeReport:
    """How one node ended."""

    node: Node
    outcome: Outcome
    error: AgevalError | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {**self.node.summary(), "outcome": self.outcome}
        if self.error is not None:
            data["error"] = self.error.to_dict()
        return data


@dataclass
class ExecutionReport:
    """Every node's outcome, in dependency order."""

    nodes: list[NodeReport]

    @property
    def ok(self) -> bool:
        return all(item.outcome in ("reused", "computed") for item in self.nodes)

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(("reused", "computed", "failed", "blocked"), 0)
        for item in self.nodes:
            counts[item.outcome] += 1
        return counts


def _run_one(node: Node, executor: Executor | None, context: ExecutionContext) -> ActionManifest:
    if executor is None:
        raise AgevalError(
            "executor_unavailable",
            f"no executor is installed for {node.kind} nodes",
            hint="this ageval version plans these nodes but cannot compute them yet",
        )
    with context.store.in_use():
        result = executor(node, context)
        manifest = ActionManifest.create(node.kind, node.key, result.outputs, result.meta)
        context.store.put_action(manifest)
    return manifest


def execute(
    plan: Plan,
    store: CacheStore,
    executors: Mapping[str, Executor],
    *,
    workers: int = 1,
    on_progress: Callable[[NodeReport], None] | None = None,
) -> ExecutionReport:
    """Compute every missing node of `plan`; reuse the cached ones."""
    context = ExecutionContext(plan=plan, store=store)
    graph = plan.graph
    reports: dict[str, NodeReport] = {}
    waiting = {name: set(graph.predecessors(name)) for name in graph.nodes}
    running: dict[Future[ActionManifest], str] = {}

    def finish(name: str, report: NodeReport) -> None:
        reports[name] = report
        if on_progress is not None:
            on_progress(report)
        if report.outcome in ("failed", "blocked"):
            for descendant in nx.descendants(graph, name):
                if descendant not in reports:
                    waiting.pop(descendant, None)
                    reports[descendant] = NodeReport(graph.nodes[descendant]["node"], "blocked")
                    if on_progress is not None:
                        on_progress(reports[descendant])
            return
        for child in graph.successors(name):
            if child in waiting:
                waiting[child].discard(name)

    def start_ready(pool: ThreadPoolExecutor) -> None:
        while ready := [n for n, deps in waiting.items() if not deps]:
            for name in ready:
                start(pool, name)

    def start(pool: ThreadPoolExecutor, name: str) -> None:
        if name not in waiting:
            return
        del waiting[name]
        node: Node = graph.nodes[name]["node"]
        if node.status == "hit":
            action = node.action or store.get_action(node.kind, node.key)
            if action is not None:
                with context.lock:
                    context.results[name] = action
                finish(name, NodeReport(node, "reused"))
                return
        running[pool.submit(_run_one, node, executors.get(node.kind), context)] = name

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        start_ready(pool)
        while running:
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for future in done:
                name = running.pop(future)
                node = graph.nodes[name]["node"]
                try:
                    manifest = future.result()
                except AgevalError as exc:
                    finish(name, NodeReport(node, "failed", exc))
                    continue
                except Exception as exc:  # an executor bug must not take the whole job down
                    error = AgevalError("node_failed", f"{type(exc).__name__}: {exc}")
                    finish(name, NodeReport(node, "failed", error))
                    continue
                with context.lock:
                    context.results[name] = manifest
                finish(name, NodeReport(node, "computed"))
            start_ready(pool)
    order = list(nx.topological_sort(graph))
    return ExecutionReport(nodes=[reports[name] for name in order if name in reports])
