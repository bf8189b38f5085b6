"""Planning: build the DAG of nodes for a request (tasks x attempts), keyed and marked hit/miss.

The planner is generic over rules and over task formats. Each rule's scope says how many nodes
it has (one per task, per attempt, per job); its inputs say what enters the key. What it plans
over is a `PlanSource`: the tasks' directories, the dataset's and profiles' digests, and a way
to resolve a task's lock document. Lock nodes are materialised while planning (loaded from the
cache, or resolved by the source) because other keys read their fields.
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agevalx.cache.manifest import ActionManifest
from agevalx.cache.statcache import StatCache
from agevalx.cache.store import CacheStore, PresentObjects
from agevalx.cache.tree import IGNORED_GLOBS, tree_values
from agevalx.errors import AgevalError, ConfigError
from agevalx.graph import memo as plan_memo
from agevalx.graph.dag import NodeGraph
from agevalx.graph.keys import lock_field, node_key, select_files
from agevalx.graph.nodes import Node, node_id
from agevalx.graph.rules import PACKAGE_INPUTS, Rule, RuleError, load_rules
from agevalx.hashing import canonical_json, canonical_members, digest_file

if TYPE_CHECKING:
    import networkx as nx

LOCK_KIND = "lock"
PLANNER_VALUES = frozenset({"attempt", "tasks"})
"""Request inputs the planner fills itself: the attempt index and the job's task ids."""
SHARED_INPUTS = frozenset(
    {"dataset_files", "profiles_file", "task_files", "lock_fields", "package"}
)
"""Inputs that are the same for every attempt of a task (only `request` varies)."""
ATTEMPT_INPUTS = frozenset({"request"})
"""Inputs that are the same for every task at one attempt index (of a planned node)."""
JOB_INPUTS = frozenset({"dataset_files", "profiles_file", "package"})
"""Shared inputs that are the same for every task too (they read no task)."""


class PlanSource(Protocol):
    """What a plan is made over: a dataset's tasks, as its format sees them."""

    @property
    def root(self) -> Path:
        """The dataset directory (`.ageval/` views and journals live under it)."""
        ...

    def task_dir(self, task_id: str) -> Path:
        """The directory of a task."""
        ...

    def dataset_file(self, name: str) -> Path:
        """A file relative to the dataset root (for `inputs.dataset_files`)."""
        ...

    def profiles_digest(self) -> dict[str, str] | None:
        """Digests of the profiles file in use and its overlays (None: no profiles file)."""
        ...

    def lock_document(self, task_id: str, files: Mapping[str, str]) -> dict[str, Any]:
        """Resolve a task's lock document; `files` are the planner's digests of its files
        (`{path: digest}`, `+x` after an executable's digest), so nothing is read twice."""
        ...


@dataclass(frozen=True)
class GraphRequest:
    """What to plan: which tasks, how many attempts, and the request's key values."""

    tasks: tuple[str, ...]
    k: int = 1
    kinds: frozenset[str] | None = None
    """Plan only these kinds (and what they need); all when None."""
    attempts: tuple[int, ...] | None = None
    """Plan only these attempt indices (a resume); 0..k-1 when None."""
    values: Mapping[str, Any] = field(default_factory=dict)
    """The request inputs rules read (`agent`, `model`, `sample`, `k`, `fork`, ...)."""
    entries: bool = True
    """Whether each hit carries its action entry (`Node.action`). A listing of the nodes
    needs only their keys and statuses: with False, a plan remembered by the plan memo
    leaves its hits' entries unparsed (`action` None), and a caller that needs one reads it
    from the store. Not part of what the memo is filed under: the same memo serves both."""


@dataclass
class Plan:
    """A planned graph: nodes by id, edges parent -> child."""

    dataset: PlanSource
    dag: NodeGraph
    """The graph as planned; `graph` is the networkx graph made from it."""
    task_ids: tuple[str, ...]
    key_inputs: Callable[[Rule, str, Mapping[str, Any]], dict[str, Any]] | None = None
    """A rule's key inputs for a planned task, with the given request values: how a branch
    node keyed beside the graph (a replay) reads the same inputs a planned node would."""

    @cached_property
    def graph(self) -> nx.DiGraph:
        """The plan as a networkx DiGraph (each node under `node`), made on first use: once
        made it is the plan (a replay adds its branch to it)."""
        return self.dag.to_networkx()

    def _built(self) -> nx.DiGraph | None:
        graph: nx.DiGraph | None = self.__dict__.get("graph")
        return graph

    def node_ids(self) -> list[str]:
        """Every node's id, in the order the nodes were added."""
        graph = self._built()
        return list(self.dag.nodes) if graph is None else list(graph.nodes)

    def parents(self, name: str) -> list[str]:
        """The parents of node `name`, in networkx's order, without making the networkx graph
        when it was not made (executing a node reads its parents' results)."""
        graph = self._built()
        if graph is None:
            return self.dag.parents(name)
        return list(graph.predecessors(name))

    def nodes(self) -> list[Node]:
        """Every node in topological order (networkx's)."""
        graph = self._built()
        if graph is None:
            return self.dag.topological()
        import networkx as nx

        return [graph.nodes[name]["node"] for name in nx.topological_sort(graph)]

    def structure(self) -> tuple[dict[str, Node], dict[str, list[str]]]:
        """The nodes by id, in the order they were added, and each one's children: what a
        walk of the plan needs, without making the networkx graph when it was not made."""
        graph = self._built()
        if graph is None:
            return dict(self.dag.nodes), {
                name: list(children) for name, children in self.dag.children.items()
            }
        return (
            {name: data["node"] for name, data in graph.nodes(data=True)},
            {name: list(graph.successors(name)) for name in graph.nodes},
        )

    def __contains__(self, name: object) -> bool:
        graph = self._built()
        return name in (self.dag.nodes if graph is None else graph)

    def edges(self) -> list[tuple[str, str]]:
        """Every edge parent -> child, in networkx's order."""
        graph = self._built()
        return list(self.dag.edges() if graph is None else graph.edges)

    def node(self, name: str) -> Node:
        graph = self._built()
        if graph is None:
            found = self.dag.nodes.get(name)
        else:
            found = graph.nodes[name]["node"] if name in graph else None
        if found is None:
            raise ConfigError(
                "node_not_found",
                f"the plan has no node {name!r}",
                field="--node",
                hint="list the nodes with: ageval graph show <dataset>",
            )
        return found

    def lock(self, task_id: str) -> dict[str, Any]:
        """The lock document of a planned task."""
        document: dict[str, Any] = self.node(node_id(LOCK_KIND, task_id, None)).payload["lock"]
        return document


def kind_order(rules: dict[str, Rule]) -> list[str]:
    """The kinds in dependency order, ties broken by name."""
    before = {
        rule.kind: {kind for kind in (*rule.parents, *rule.after) if kind != rule.kind}
        for rule in rules.values()
    }
    order: list[str] = []
    while len(order) < len(before):
        ready = [kind for kind, needs in before.items() if kind not in order and needs <= {*order}]
        if not ready:
            raise RuleError("invalid_rule", "rules/ has a cycle among its kinds' parents")
        order.append(min(ready))
    return order


def _truthy(value: Any) -> bool:
    return value not in (None, False, "", [], {})


class _Planner:
    def __init__(
        self,
        source: PlanSource,
        request: GraphRequest,
        store: CacheStore,
        stat_cache: StatCache | None,
    ):
        self.source = source
        self.request = request
        self.store = store
        self.stat_cache = stat_cache
        self.rules = load_rules()
        self.task_ids = tuple(dict.fromkeys(request.tasks))
        self.graph = NodeGraph()
        self.files: dict[str, dict[str, str]] = {}
        self.locks: dict[str, dict[str, Any]] = {}
        self._profiles: tuple[dict[str, str] | None] | None = None
        # Memos: one plan reads each file once, and the inputs every attempt of a task
        # shares (its selected files and lock fields) are computed once per rule and task.
        self._file_digests: dict[Path, str | None] = {}
        self._selected: dict[tuple[str, str], dict[str, str]] = {}
        self._lock_fields: dict[tuple[str, str], dict[str, Any]] = {}
        self._encoded: dict[tuple[str, str | int | None, str], bytes] = {}
        self._requests: dict[tuple[str, int | None], dict[str, Any]] = {}
        self._job_inputs: dict[str, dict[str, Any]] = {}
        self._above: dict[str, list[tuple[str, bool, bool]]] = {}
        # Outputs found complete: shared by many entries (an empty tree, a common blob), they
        # are checked once while the plan holds the gc lock.
        self._present = PresentObjects()
        # Entries looked up, by kind and key: the tasks of a dataset often share an image.
        self._actions: dict[tuple[str, str], ActionManifest | None] = {}

    def profiles_digest(self) -> dict[str, str] | None:
        if self._profiles is None:
            self._profiles = (self.source.profiles_digest(),)
        return self._profiles[0]

    def task_files(self, task_id: str) -> dict[str, str]:
        """A task's `{path: value}` (see `tree_values`; directories count, so that an empty
        illegal one changes the key); the first call walks every planned task not walked yet,
        so that the stat cache is asked for all their files at once."""
        if task_id not in self.files:
            pending = [task_id, *(t for t in self.task_ids if t not in self.files and t != task_id)]
            specials: list[list[str]] = [[] for _ in pending]
            trees = tree_values(
                [self.source.task_dir(pending_id) for pending_id in pending],
                exclude=IGNORED_GLOBS,
                stat_cache=self.stat_cache,
                specials=specials,
            )
            for pending_id, values, found in zip(pending, trees, specials, strict=True):
                # A pipe or socket changes the key, so a reused lock never skips its refusal.
                # (`tree_values` gives its paths in order already: only specials need a sort.)
                self.files[pending_id] = (
                    dict(sorted({**values, **dict.fromkeys(found, "special")}.items()))
                    if found
                    else values
                )
        return self.files[task_id]

    def digest_file(self, path: Path) -> str | None:
        """A dataset file's digest (None when it is not a regular file), read once per plan."""
        if path not in self._file_digests:
            self._file_digests[path] = digest_file(path) if path.is_file() else None
        return self._file_digests[path]

    def package_digest(self, name: str) -> str:
        """The digest of one of ageval's own files that enter keys, read once per plan."""
        path = PACKAGE_INPUTS[name]
        if path not in self._file_digests:
            self._file_digests[path] = digest_file(path)  # a missing one is a broken install
        return str(self._file_digests[path])

    def selected_files(self, rule: Rule, task_id: str) -> dict[str, str]:
        memo = (rule.kind, task_id)
        if memo not in self._selected:
            assert rule.inputs.task_files is not None
            self._selected[memo] = select_files(self.task_files(task_id), rule.inputs.task_files)
        return self._selected[memo]

    def lock_fields(self, rule: Rule, task_id: str) -> dict[str, Any]:
        memo = (rule.kind, task_id)
        if memo not in self._lock_fields:
            document = self.locks[task_id]
            self._lock_fields[memo] = {
                name: lock_field(document, name) for name in rule.inputs.lock_fields
            }
        return self._lock_fields[memo]

    def inputs(
        self,
        rule: Rule,
        task_id: str | None,
        attempt: int | None,
        given: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        spec = rule.inputs
        found: dict[str, Any] = {}
        job = self.job_inputs(rule)
        if "dataset_files" in job:
            found["dataset_files"] = job["dataset_files"]
        if "profiles_file" in job:
            found["profiles_file"] = job["profiles_file"]
        if spec.task_files is not None and task_id is not None:
            found["task_files"] = self.selected_files(rule, task_id)
        if spec.lock_fields and task_id is not None:
            found["lock_fields"] = self.lock_fields(rule, task_id)
        if spec.request:
            found["request"] = (
                self.request_inputs(rule, attempt)
                if not given
                else {
                    name: given[name] if name in given else self._request_value(rule, name, attempt)
                    for name in spec.request
                }
            )
        if "package" in job:
            found["package"] = job["package"]
        return found

    def job_inputs(self, rule: Rule) -> dict[str, Any]:
        """A rule's inputs that read no task (`JOB_INPUTS`), made once per rule and shared by
        its nodes' inputs (which nothing changes)."""
        if rule.kind not in self._job_inputs:
            spec = rule.inputs
            found: dict[str, Any] = {}
            if spec.dataset_files:
                found["dataset_files"] = {
                    name: self.digest_file(self.source.dataset_file(name))
                    for name in spec.dataset_files
                }
            if spec.profiles_file:
                found["profiles_file"] = self.profiles_digest()
            if spec.package:
                found["package"] = {name: self.package_digest(name) for name in spec.package}
            self._job_inputs[rule.kind] = found
        return self._job_inputs[rule.kind]

    def request_inputs(self, rule: Rule, attempt: int | None) -> dict[str, Any]:
        """A planned node's `request` inputs: the same for every task, so made once per rule
        and attempt index (and shared by those nodes' inputs, which nothing changes)."""
        memo = (rule.kind, attempt)
        if memo not in self._requests:
            self._requests[memo] = {
                name: self._request_value(rule, name, attempt) for name in rule.inputs.request
            }
        return self._requests[memo]

    def encoded_inputs(
        self, rule: Rule, task_id: str | None, attempt: int | None, inputs: dict[str, Any]
    ) -> bytes:
        """`canonical_json(inputs)` of a planned node, with the inputs all attempts of a task
        share serialised once per rule and task (most of a key's bytes, for 1/k of the work),
        those all tasks share once per rule, and those all tasks share at one attempt index
        once per rule and attempt."""
        members: dict[str, bytes] = {}
        for name, value in inputs.items():
            memo: tuple[str, str | int | None, str]
            if name in JOB_INPUTS:
                memo = (rule.kind, None, name)
            elif name in SHARED_INPUTS:
                memo = (rule.kind, task_id, name)
            elif name in ATTEMPT_INPUTS:
                memo = (rule.kind, attempt, name)
            else:
                members[name] = canonical_json(value)
                continue
            encoded = self._encoded.get(memo)
            if encoded is None:
                encoded = self._encoded[memo] = canonical_json(value)
            members[name] = encoded
        return canonical_members(members)

    def _request_value(self, rule: Rule, name: str, attempt: int | None) -> Any:
        if name == "attempt":
            return attempt
        if name == "tasks":
            return list(self.task_ids)
        if name not in self.request.values:
            raise RuleError(
                "invalid_rule",
                f"rules/{rule.kind}.yaml reads the request input {name!r}, which this command "
                f"does not give (it gives: {', '.join(sorted(self.request.values))})",
            )
        return self.request.values[name]

    def applies(self, rule: Rule, task_id: str | None) -> bool:
        """Whether a task gets a node of `rule` (its `when` lock field is set)."""
        if rule.when is None or task_id is None:
            return True
        return _truthy(lock_field(self.locks[task_id], rule.when))

    def instances(self, rule: Rule) -> list[tuple[str | None, int | None]]:
        if rule.scope == "task":
            return [(task_id, None) for task_id in self.task_ids if self.applies(rule, task_id)]
        if rule.scope == "attempt":
            indices = self.request.attempts or tuple(range(self.request.k))
            return [(t, a) for t in self.task_ids if self.applies(rule, t) for a in indices]
        is_job = self.request.k > 1 or len(self.task_ids) > 1
        if rule.scope == "job" and is_job and self.request.attempts is None:
            return [(None, None)]
        return []

    def parent_ids(self, kind: str, task_id: str | None, attempt: int | None) -> list[str]:
        """The planned nodes of `kind` that a node of (task, attempt) hangs under."""
        scope = self.rules[kind].scope
        if task_id is None:
            return [name for name, node in self.graph.nodes.items() if node.kind == kind]
        if scope == "task":
            candidate = node_id(kind, task_id, None)
        elif scope == "attempt":
            candidate = node_id(kind, task_id, attempt)
        else:
            candidate = node_id(kind, None, None)
        return [candidate] if candidate in self.graph.nodes else []

    def kinds_above(self, rule: Rule) -> list[tuple[str, bool, bool]]:
        """The kinds a node of `rule` hangs under, parents first then `after` kinds, as
        `(kind, whether its keys enter the key, whether it may have no node)`; once per rule."""
        if rule.kind not in self._above:
            kinds = dict.fromkeys(k for k in (*rule.parents, *rule.after) if k != rule.kind)
            self._above[rule.kind] = [
                (kind, kind in rule.parents, self.rules[kind].when is not None) for kind in kinds
            ]
        return self._above[rule.kind]

    def add(self, rule: Rule, task_id: str | None, attempt: int | None) -> None:
        nodes = self.graph.nodes
        above: list[str] = []
        parents: dict[str, list[str]] = {}
        for kind, keyed, optional in self.kinds_above(rule):
            names = self.parent_ids(kind, task_id, attempt)
            above.extend(names)
            # A parent kind a task has no node of (its rule's `when`) stays out of the key.
            if keyed and (names or not optional):
                parents[kind] = [nodes[name].key for name in names]
        inputs = self.inputs(rule, task_id, attempt)
        key = node_key(rule, inputs, parents, self.encoded_inputs(rule, task_id, attempt, inputs))
        action = self.action(rule.kind, key)
        node = Node(
            id=node_id(rule.kind, task_id, attempt),
            kind=rule.kind,
            key=key,
            inputs=inputs,
            parents=parents,
            status="hit" if action is not None else "miss",
            task_id=task_id,
            attempt=attempt,
            action=action,
        )
        if rule.kind == LOCK_KIND and task_id is not None:
            self._materialise_lock(node, task_id)
        self.graph.add(node)
        for parent in above:
            self.graph.link(parent, node.id)

    def action(self, kind: str, key: str) -> ActionManifest | None:
        """The complete entry of a node (None: a miss), looked up once per plan."""
        memo = (kind, key)
        if memo not in self._actions:
            self._actions[memo] = self.store.get_action(kind, key, self._present)
        return self._actions[memo]

    def _materialise_lock(self, node: Node, task_id: str) -> None:
        document = self._cached_lock(node) if node.status == "hit" else None
        if document is None:
            node.status, node.action = "miss", None
            document = self.source.lock_document(task_id, self.task_files(task_id))
        node.payload["lock"] = document
        self.locks[task_id] = document

    def _cached_lock(self, node: Node) -> dict[str, Any] | None:
        output = node.action.outputs.get("lock") if node.action else None
        if output is None:
            return None
        try:
            document = json.loads(self.store.get_bytes(output.digest))
        except (ValueError, OSError, AgevalError):
            return None
        return document if isinstance(document, dict) else None

    def stored(self) -> plan_memo.Stored:
        """This plan (of hits only) as a memo: its graph and the witnesses of what it read."""
        read: list[Path] = []
        for task_id, values in self.files.items():
            root = self.source.task_dir(task_id)
            read += [root, root / ".", *(root / relative for relative in values)]
        read += self._file_digests
        return plan_memo.Stored.of(
            plan_memo.witnesses(self.store, self.graph.nodes.values(), read),
            self.graph,
            self._profiles,
        )

    def plan(self) -> Plan:
        wanted = self.request.kinds
        order = kind_order(self.rules)
        if wanted is not None:
            needed = set(wanted)
            for kind in reversed(order):
                if kind in needed:
                    needed.update(self.rules[kind].parents)
                    needed.update(self.rules[kind].after)
            order = [kind for kind in order if kind in needed]
        # One shared hold of the gc lock for every lookup, rather than one per node.
        with self.store.in_use():
            for kind in order:
                rule = self.rules[kind]
                for task_id, attempt in self.instances(rule):
                    self.add(rule, task_id, attempt)
        return Plan(
            dataset=self.source,
            dag=self.graph,
            task_ids=self.task_ids,
            key_inputs=lambda rule, task_id, given: self.inputs(rule, task_id, None, given),
        )


class _Collector:
    freeze = False
    """Whether leaving `collector_paused` freezes what is alive (`plans_once`)."""


def plans_once() -> None:
    """Declare this process a command that plans once and ends (`ageval run`, `replay`;
    `graph show` keeps the collector paused until it has printed): from now on, leaving
    `collector_paused` moves every object alive out of the cycle collector's sight
    (`gc.freeze`) before collections resume. The plan lives as long as such a command, so
    walking it again is all a later collection would do with it: the two full collections of
    a no-op run of 1,000 tasks x k=3 (just after its plan and just after its 3,000 results
    were read, 130 ms each) were a fifth of the whole command. Freezing frees nothing less: a
    frozen object still goes when its last reference does, and planning makes no cyclic
    garbage (`tests/unit/graph/test_collector.py`). A process that plans again and again (the
    viewer, a program using ageval's API) does not call this, so nothing of its own is
    frozen."""
    _Collector.freeze = True


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cycle collector: planning makes tens of thousands of acyclic objects
    (nodes, inputs, parsed entries), and the collections they would trigger, each walking
    every object alive, cost a quarter of a cold plan. A short command that only lists its
    plan keeps it paused until it has printed (the next collection would walk the plan).
    See `plans_once` for what happens on the way out in a command that plans once."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if _Collector.freeze:
                gc.freeze()
            gc.enable()


def plan_graph(source: PlanSource, request: GraphRequest, store: CacheStore) -> Plan:
    """Build the graph of `request` over `source`; the source raises ConfigError/UsageError
    for invalid tasks while their locks are resolved. A plan of hits only is kept in the
    plan memo (`graph.memo`), and returned from it while nothing it read has changed."""
    with collector_paused():
        identity = _memo_identity(source, request, store)
        if identity is not None:
            stored = plan_memo.load(identity)
            if stored is not None and (
                stored.profiles is None or stored.profiles[0] == source.profiles_digest()
            ):
                return _remembered(source, request, store, stored)
        made = time.time_ns()
        planner = _Planner(source, request, store, store.stat_cache)
        planned = planner.plan()
        if identity is not None and all(node.action for node in planner.graph.nodes.values()):
            plan_memo.save(identity, planner.stored(), made)
        return planned


def _memo_identity(
    source: PlanSource, request: GraphRequest, store: CacheStore
) -> dict[str, Any] | None:
    """What a plan memo is filed under, or None when none may be used: turned off, a cache
    that reads through to a remote (whose state has no witness here), or request values
    that are not JSON."""
    if not plan_memo.enabled() or type(store) is not CacheStore:
        return None
    try:
        values = canonical_json(dict(request.values)).decode()
    except (TypeError, ValueError):
        return None
    return {
        "source": f"{type(source).__module__}.{type(source).__qualname__}",
        "dataset": str(Path(source.root).resolve()),
        "cache": str(store.root.resolve()),
        "instance": store.instance,
        "tasks": list(request.tasks),
        "k": request.k,
        "kinds": None if request.kinds is None else sorted(request.kinds),
        "attempts": None if request.attempts is None else list(request.attempts),
        "values": values,
    }


def _remembered(
    source: PlanSource, request: GraphRequest, store: CacheStore, stored: plan_memo.Stored
) -> Plan:
    """The remembered plan. A branch keyed beside it (a replay) needs the planner's inputs:
    the planner runs then, once."""
    planners: list[_Planner] = []

    def key_inputs(rule: Rule, task_id: str, given: Mapping[str, Any]) -> dict[str, Any]:
        if not planners:
            planner = _Planner(source, request, store, store.stat_cache)
            with collector_paused():
                planner.plan()
            planners.append(planner)
        return planners[0].inputs(rule, task_id, None, given)

    return Plan(
        dataset=source,
        dag=stored.graph(entries=request.entries),
        task_ids=tuple(dict.fromkeys(request.tasks)),
        key_inputs=key_inputs,
    )
