"""Executing a plan: compute the missing nodes in dependency order with a bounded worker pool.

A node runs once every parent is done. A failed node stops its descendants and nothing else.
Every node is reported as reused, computed, failed or blocked. Nodes of one key (the same
work: two tasks of the same content, many tasks of one Dockerfile) are computed once per
execution: the first one started computes, the others wait for it and reuse its entry (or
fail with its error), as a cache hit found during the run.

Two policies of the caller shape a long job: `retry` says whether a failed node is computed
once more (an infrastructure failure, within the job's retry budget: the node is dispatched
again, the same node with the same key, and its earlier failures are kept in `tries`), and
`admit` may hold a node back before it starts (a job whose spend limit is reached starts no
new attempt): such a node and its descendants end as `skipped`.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from queue import Empty, SimpleQueue
from typing import Any, Literal

from agevalx.cache.manifest import ActionManifest
from agevalx.cache.store import CacheStore
from agevalx.errors import AgevalError
from agevalx.graph.context import Admit, Dispatch, ExecutionContext, NodeResult, Retry
from agevalx.graph.nodes import Node
from agevalx.graph.plan import Plan
from agevalx.graph.registry import executor_for
from agevalx.graph.rules import Rule, load_rules

Outcome = Literal["reused", "computed", "failed", "blocked", "skipped"]

WAKE_UP = 0.25
"""Seconds the scheduler's thread waits for a finished node before it waits again. Ctrl-C
reaches it only when it runs Python code: the kernel may deliver the SIGINT to any thread of
the process (a worker's), and then a wait of the main thread for the next finished node, an
attempt running for minutes, would not end early; it would only end with that node."""


@dataclass
class NodeReport:
    """How one node ended."""

    node: Node
    outcome: Outcome
    error: AgevalError | None = None
    action: ActionManifest | None = None
    """The node's cached result, when it was reused or computed."""
    ran_on: str | None = None
    """The cluster node that computed it (None: this process)."""
    retried: str | None = None
    """Why a cluster computed it a second time: the infrastructure failure of the first try."""
    tries: list[AgevalError] = field(default_factory=list)
    """The failures of its earlier tries, when the job's retry policy computed it again."""

    def to_dict(self) -> dict[str, Any]:
        data = {**self.node.summary(), "outcome": self.outcome}
        if self.ran_on is not None:
            data["ran_on"] = self.ran_on
        if self.retried is not None:
            data["retried"] = self.retried
        if self.tries:
            data["tries"] = [error.to_dict() for error in self.tries]
        if self.error is not None:
            data["error"] = self.error.to_dict()
        return data


@dataclass
class ExecutionReport:
    """Every node's outcome, in dependency order."""

    nodes: list[NodeReport]
    actions: dict[str, ActionManifest] = field(default_factory=dict)
    """Action entries of every finished node, by node id."""

    @property
    def ok(self) -> bool:
        return all(item.outcome in ("reused", "computed") for item in self.nodes)

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(("reused", "computed", "failed", "blocked", "skipped"), 0)
        for item in self.nodes:
            counts[item.outcome] += 1
        return counts


def check_outputs(rule: Rule, result: NodeResult) -> None:
    """An executor must store exactly the outputs its rule declares, each of its type."""
    declared = {output.name: output.type for output in rule.outputs}
    stored = {name: ref.type for name, ref in result.outputs.items()}
    if stored != declared:
        raise AgevalError(
            "node_outputs_mismatch",
            f"the {rule.kind} executor stored {sorted(stored.items())}, but rules/{rule.kind}.yaml "
            f"declares {sorted(declared.items())}",
            hint="this is a bug in ageval: the rule and its executor disagree",
        )


def run_node(node: Node, context: ExecutionContext) -> ActionManifest:
    """Compute `node` in this process with its kind's executor and store its action entry."""
    rule = load_rules()[node.kind]
    executor = executor_for(rule)
    with context.store.in_use():
        result = executor(node, context)
        check_outputs(rule, result)
        manifest = ActionManifest.create(node.kind, node.key, result.outputs, result.meta)
        context.store.put_action(manifest)
    return manifest


class _Held(Exception):
    """The admission policy held a node back as a worker was about to compute it."""

    def __init__(self, error: AgevalError) -> None:
        super().__init__(error.message)
        self.error = error


class _Scheduler:
    """Starts nodes whose parents are done, up to `workers` at a time."""

    def __init__(
        self,
        context: ExecutionContext,
        workers: int,
        on_progress: Callable[[NodeReport], None] | None,
        on_start: Callable[[Node], None] | None = None,
        dispatch: Dispatch = run_node,
        retry: Retry | None = None,
        admit: Admit | None = None,
    ) -> None:
        self.context = context
        self.dispatch = dispatch
        self.retry = retry
        self.admit = admit
        self.tries: dict[str, list[AgevalError]] = {}
        """The failures of the earlier tries of nodes computed again, by node."""
        self.nodes, self.children = context.plan.structure()
        self.on_progress = on_progress
        self.on_start = on_start
        self.pool = ThreadPoolExecutor(max_workers=max(1, workers))
        self.reports: dict[str, NodeReport] = {}
        self.waiting: dict[str, set[str]] = {name: set() for name in self.nodes}
        for parent, children in self.children.items():
            for child in children:
                self.waiting[child].add(parent)
        self.position = {name: index for index, name in enumerate(self.waiting)}
        self.ready = {name for name, parents in self.waiting.items() if not parents}
        """Waiting nodes whose parents are all done: kept as they become ready, so that
        starting nodes never scans every waiting node (a job of 10,000 tasks has 80,000)."""
        self.running: dict[Future[ActionManifest], str] = {}
        self.done: SimpleQueue[Future[ActionManifest]] = SimpleQueue()
        """Futures as they finish (each tells it from its worker): waiting for the next one
        never walks every running future (all the ready nodes are submitted at once)."""
        self.computing: dict[tuple[str, str], str] = {}
        """The node computing each (kind, key) started in this execution."""
        self.followers: dict[str, list[str]] = {}
        """Nodes waiting for the node computing their key, by that node."""

    def _report(self, name: str, report: NodeReport) -> None:
        self.reports[name] = report
        if self.on_progress is not None:
            self.on_progress(report)

    def finish(self, name: str, report: NodeReport) -> None:
        report.tries = self.tries.get(name, [])
        self._report(name, report)
        for follower in self.followers.pop(name, []):
            self.follow(follower, report)
        if report.outcome in ("failed", "blocked", "skipped"):
            skipped = report.outcome == "skipped"
            for descendant in self.descendants(name):
                if descendant not in self.reports:
                    self.waiting.pop(descendant, None)
                    node = self.nodes[descendant]
                    self._report(
                        descendant,
                        NodeReport(node, "skipped", report.error)
                        if skipped
                        else NodeReport(node, "blocked"),
                    )
            return
        for child in self.children[name]:
            if child in self.waiting:
                parents = self.waiting[child]
                parents.discard(name)
                if not parents:
                    self.ready.add(child)

    def descendants(self, name: str) -> list[str]:
        """Every node below `name`, each once."""
        found: dict[str, None] = {}
        pending = list(self.children[name])
        while pending:
            child = pending.pop()
            if child not in found:
                found[child] = None
                pending.extend(self.children[child])
        return list(found)

    def start_ready(self) -> None:
        """Start every ready node in plan order; then those their synchronous ends (reused
        nodes) made ready, in plan order again, until none is left."""
        while self.ready:
            batch = sorted(self.ready, key=self.position.__getitem__)
            self.ready.clear()
            for name in batch:
                if name in self.waiting:  # not blocked meanwhile by a failed node
                    self.start(name)

    def start(self, name: str) -> None:
        del self.waiting[name]
        node: Node = self.nodes[name]
        if node.status == "hit":
            action = node.action or self.context.store.get_action(node.kind, node.key)
            if action is not None:
                with self.context.lock:
                    self.context.results[name] = action
                self.finish(name, NodeReport(node, "reused", action=action))
                return
        leader = self.computing.setdefault((node.kind, node.key), name)
        if leader != name:  # the same work is under way or done: never pay for it twice
            if leader in self.reports:
                self.follow(name, self.reports[leader])
            else:
                self.followers.setdefault(leader, []).append(name)
            return
        self.submit(name, node)

    def submit(self, name: str, node: Node) -> None:
        future = self.pool.submit(self.begin, node)
        self.running[future] = name
        future.add_done_callback(self.done.put)

    def begin(self, node: Node) -> ActionManifest:
        """In a worker: admit the node now that a worker is free for it, then compute it."""
        held = self.admit(node) if self.admit is not None else None
        if held is not None:
            raise _Held(held)
        if self.on_start is not None:
            self.on_start(node)
        return self.dispatch(node, self.context)

    def follow(self, name: str, leader: NodeReport) -> None:
        """Finish `name` as the node that computed its key finished: reused, or failed."""
        node: Node = self.nodes[name]
        if leader.action is None:
            outcome: Outcome = "skipped" if leader.outcome == "skipped" else "failed"
            self.finish(name, NodeReport(node, outcome, leader.error))
            return
        with self.context.lock:
            self.context.results[name] = leader.action
        self.finish(name, NodeReport(node, "reused", action=leader.action))

    def collect(self, future: Future[ActionManifest]) -> None:
        name = self.running.pop(future)
        node = self.nodes[name]
        with self.context.lock:
            where = self.context.placements.get(name), self.context.retries.get(name)
        try:
            manifest = future.result()
        except _Held as held:
            self.finish(name, NodeReport(node, "skipped", held.error))
            return
        except Exception as exc:
            error = (
                exc
                if isinstance(exc, AgevalError)
                # an executor bug must not take the whole job down
                else AgevalError("node_failed", f"{type(exc).__name__}: {exc}")
            )
            earlier = self.tries.setdefault(name, [])
            if self.retry is not None and self.retry(node, error, len(earlier) + 1):
                earlier.append(error)
                self.submit(name, node)
                return
            self.finish(name, NodeReport(node, "failed", error, ran_on=where[0], retried=where[1]))
            return
        with self.context.lock:
            self.context.results[name] = manifest
        report = NodeReport(node, "computed", action=manifest, ran_on=where[0], retried=where[1])
        self.finish(name, report)

    def run(self) -> None:
        self.start_ready()
        while self.running:
            done = [self.next_done()]
            while True:  # and every other future finished by now
                try:
                    done.append(self.done.get_nowait())
                except Empty:
                    break
            for future in done:
                self.collect(future)
            self.start_ready()

    def next_done(self) -> Future[ActionManifest]:
        """The next finished node's future, waiting in slices of `WAKE_UP` so that a Ctrl-C
        is raised here within one (see `WAKE_UP`)."""
        while True:
            try:
                return self.done.get(timeout=WAKE_UP)
            except Empty:
                continue


def execute(
    plan: Plan,
    store: CacheStore,
    *,
    workers: int = 1,
    on_progress: Callable[[NodeReport], None] | None = None,
    on_interrupt: Callable[[], object] | None = None,
    on_start: Callable[[Node], None] | None = None,
    dispatch: Dispatch = run_node,
    retry: Retry | None = None,
    admit: Admit | None = None,
) -> ExecutionReport:
    """Compute every missing node of `plan` with its kind's registered executor; reuse the
    cached ones. `dispatch` computes one node (a cluster's runs some on other machines);
    `retry` and `admit` are the job's policies (see the module's docstring).

    On Ctrl-C, `on_interrupt` runs first (e.g. to remove containers, so that running
    executors fail fast), queued nodes are cancelled, and the interrupt propagates.
    """
    context = ExecutionContext(plan=plan, store=store)
    scheduler = _Scheduler(context, workers, on_progress, on_start, dispatch, retry, admit)
    try:
        scheduler.run()
    except KeyboardInterrupt:
        if on_interrupt is not None:
            on_interrupt()
        scheduler.pool.shutdown(wait=False, cancel_futures=True)
        raise
    scheduler.pool.shutdown(wait=True)
    return ExecutionReport(
        nodes=[scheduler.reports[node.id] for node in plan.nodes() if node.id in scheduler.reports],
        actions=dict(context.results),
    )
