"""Planning: build the DAG of nodes for a request (tasks x attempts), keyed and marked hit/miss.

The planner is generic over rules. Each rule's scope says how many nodes it has (one per task,
per attempt, per job); its inputs say what enters the key. Lock nodes are materialised while
planning (loaded from the cache, or resolved in memory) because other keys read their fields.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx

from agevalx.cache.manifest import TreeEntry, TreeManifest
from agevalx.cache.statcache import StatCache
from agevalx.cache.store import CacheStore
from agevalx.cache.tree import hash_tree
from agevalx.dataset.files import IGNORED_NAMES
from agevalx.dataset.loader import Dataset, load_dataset
from agevalx.errors import ConfigError, UsageError
from agevalx.graph.keys import lock_field, node_key, select_files
from agevalx.graph.nodes import Node, node_id
from agevalx.graph.rules import PACKAGE_INPUTS, Rule, load_rules
from agevalx.harbor.dataset import harbor_dataset, harbor_lock
from agevalx.harbor.options import HarborOptions
from agevalx.hashing import digest_file
from agevalx.lockfile.binding import PROFILES_FILE, BindingRequest
from agevalx.lockfile.resolve import resolve_task_lock

LOCK_KIND = "lock"
IGNORED_GLOBS = [pattern for name in IGNORED_NAMES for pattern in (name, f"**/{name}")]


@dataclass(frozen=True)
class PlanRequest:
    """What to plan: which tasks, how many attempts, and how agents are bound."""

    dataset: Path | None
    """The dataset directory; `None` for a Harbor job config that lists its own tasks."""
    tasks: tuple[str, ...] = ()
    k: int = 1
    binding: BindingRequest = field(default_factory=BindingRequest)
    sample: int = 0
    kinds: frozenset[str] | None = None
    """Plan only these kinds (and what they need); all when None."""
    attempts: tuple[int, ...] | None = None
    """Plan only these attempt indices (a resume); 0..k-1 when None."""
    fork: dict[str, str] | None = None
    """A fork's origin: the source attempt and the checkpoint key it starts from."""
    harbor: HarborOptions | None = None
    """A Harbor run's job config, `--env-params`, primary metric and strategy."""


@dataclass
class Plan:
    """A planned graph: nodes by id in a networkx DiGraph (edges parent -> child)."""

    dataset: Dataset
    graph: nx.DiGraph
    task_ids: tuple[str, ...]
    profiles_path: Path | None = None
    """The profiles file in use (run-time-only settings are read from it)."""
    key_inputs: Callable[[Rule, str, Mapping[str, Any]], dict[str, Any]] | None = None
    """A rule's key inputs for a planned task, with the given request values: how a branch
    node keyed beside the graph (a replay) reads the same inputs a planned node would."""

    def nodes(self) -> list[Node]:
        return [self.graph.nodes[name]["node"] for name in nx.topological_sort(self.graph)]

    def node(self, name: str) -> Node:
        if name not in self.graph:
            raise ConfigError(
                "node_not_found",
                f"the plan has no node {name!r}",
                field="--node",
                hint="list the nodes with: ageval graph show <dataset>",
            )
        node: Node = self.graph.nodes[name]["node"]
        return node


def _entry_value(entry: TreeEntry) -> str:
    if entry.type == "dir":
        return "dir"
    if entry.type == "symlink":
        return f"symlink:{entry.target}"
    return f"{entry.digest}+x" if entry.mode & 0o100 else str(entry.digest)


def _digests(manifest: TreeManifest) -> dict[str, str]:
    """`{path: value}` of a tree: a file's digest (`+x` when executable), `dir`, or
    `symlink:<target>`; directories count so that an empty illegal one changes the key."""
    return {entry.path: _entry_value(entry) for entry in manifest.entries}


def kind_order(rules: dict[str, Rule]) -> list[str]:
    order = nx.DiGraph()
    for rule in rules.values():
        order.add_node(rule.kind)
        for before in (*rule.parents, *rule.after):
            if before != rule.kind:
                order.add_edge(before, rule.kind)
    return list(nx.lexicographical_topological_sort(order))


class _Planner:
    def __init__(self, request: PlanRequest, store: CacheStore, stat_cache: StatCache | None):
        self.request = request
        self.store = store
        self.stat_cache = stat_cache
        self.rules = load_rules()
        self.dataset = self._dataset()
        self.task_ids = self._chosen_tasks()
        self.graph = nx.DiGraph()
        self.files: dict[str, dict[str, str]] = {}
        self.locks: dict[str, dict[str, Any]] = {}
        self.profiles_digest = self._profiles_digest()

    def _dataset(self) -> Dataset:
        path, options = self.request.dataset, self.request.harbor
        if options is not None and path is not None and (path / "ageval.yaml").is_file():
            raise UsageError(
                "harbor_options_on_ageval_dataset",
                "--job-config, --env-params, --primary-metric and --attempt-strategy apply to "
                "Harbor datasets only",
                field="DATASET",
                hint="an ageval dataset is configured by ageval.yaml, task.yaml and profiles.yaml",
            )
        dataset = harbor_dataset(path, options)
        if dataset is not None:
            return dataset
        if path is None:
            raise UsageError(
                "dataset_required",
                "give a dataset directory (or a Harbor --job-config that lists tasks)",
                field="DATASET",
            )
        return load_dataset(path)

    def _chosen_tasks(self) -> tuple[str, ...]:
        if not self.request.tasks:
            return self.dataset.task_ids
        for task_id in self.request.tasks:
            if task_id not in self.dataset.task_ids:
                self.dataset.load_task(task_id)  # raises task_not_found
        return tuple(dict.fromkeys(self.request.tasks))

    def _profiles_path(self) -> Path | None:
        if self.request.binding.profiles is not None:
            return self.request.binding.profiles
        path = self.dataset.root / PROFILES_FILE
        return path if path.exists() else None

    def _profiles_digest(self) -> dict[str, str] | None:
        path = self._profiles_path()
        if path is None or not path.is_file():
            return None
        digests = {path.name: digest_file(path)}
        overlays = path.parent / "overlays"
        if overlays.is_dir():
            manifest = hash_tree(overlays, stat_cache=self.stat_cache)
            digests.update({f"overlays/{path}": d for path, d in _digests(manifest).items()})
        return digests

    def task_files(self, task_id: str) -> dict[str, str]:
        if task_id not in self.files:
            manifest = hash_tree(
                self.dataset.task_dir(task_id), exclude=IGNORED_GLOBS, stat_cache=self.stat_cache
            )
            self.files[task_id] = _digests(manifest)
        return self.files[task_id]

    def inputs(
        self,
        rule: Rule,
        task_id: str | None,
        attempt: int | None,
        given: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        spec = rule.inputs
        found: dict[str, Any] = {}
        if spec.dataset_files:
            found["dataset_files"] = {
                name: digest_file(path) if (path := self.dataset.root / name).is_file() else None
                for name in spec.dataset_files
            }
        if spec.profiles_file:
            found["profiles_file"] = self.profiles_digest
        if spec.task_files is not None and task_id is not None:
            found["task_files"] = select_files(self.task_files(task_id), spec.task_files)
        if spec.lock_fields and task_id is not None:
            document = self.locks[task_id]
            found["lock_fields"] = {name: lock_field(document, name) for name in spec.lock_fields}
        if spec.request:
            given = given or {}
            found["request"] = {
                name: given[name] if name in given else self._request_value(name, attempt)
                for name in spec.request
            }
        if spec.package:
            found["package"] = {name: digest_file(PACKAGE_INPUTS[name]) for name in spec.package}
        return found

    def _request_value(self, name: str, attempt: int | None) -> Any:
        harbor = self.request.harbor
        values: dict[str, Any] = {
            "agent": self.request.binding.agent,
            "model": self.request.binding.model,
            "fork_model": self.request.binding.fork_model,
            "attempt": attempt,
            "sample": self.request.sample,
            "k": self.request.k,
            "tasks": list(self.task_ids),
            "fork": self.request.fork,
            "harbor_settings": harbor.digest() if harbor else None,
            "harbor_metric": f"{harbor.primary_metric}/{harbor.effective_strategy}"
            if harbor
            else None,
        }
        return values.get(name)

    def instances(self, rule: Rule) -> list[tuple[str | None, int | None]]:
        if rule.scope == "task":
            return [(task_id, None) for task_id in self.task_ids]
        if rule.scope == "attempt":
            indices = self.request.attempts or tuple(range(self.request.k))
            return [(t, a) for t in self.task_ids for a in indices]
        is_job = self.request.k > 1 or len(self.task_ids) > 1
        if rule.scope == "job" and is_job and self.request.attempts is None:
            return [(None, None)]
        return []

    def parent_ids(self, kind: str, task_id: str | None, attempt: int | None) -> list[str]:
        scope = self.rules[kind].scope
        if task_id is None:
            return [n for n, data in self.graph.nodes(data=True) if data["node"].kind == kind]
        if scope == "task":
            return [node_id(kind, task_id, None)]
        if scope == "attempt":
            return [node_id(kind, task_id, attempt)]
        return [node_id(kind, None, None)]

    def add(self, rule: Rule, task_id: str | None, attempt: int | None) -> None:
        parents = {
            kind: [self.graph.nodes[p]["node"].key for p in self.parent_ids(kind, task_id, attempt)]
            for kind in rule.parents
            if kind != rule.kind
        }
        inputs = self.inputs(rule, task_id, attempt)
        key = node_key(rule, inputs, parents)
        action = self.store.get_action(rule.kind, key)
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
        self.graph.add_node(node.id, node=node)
        for kind in (*rule.parents, *rule.after):
            if kind != rule.kind and kind in self._planned_kinds:
                for parent in self.parent_ids(kind, task_id, attempt):
                    self.graph.add_edge(parent, node.id)

    def _materialise_lock(self, node: Node, task_id: str) -> None:
        document = self._cached_lock(node) if node.status == "hit" else None
        if document is None and self.dataset.kind == "harbor":
            node.status, node.action = "miss", None
            document = harbor_lock(
                self.dataset, task_id, self.request.binding, self.task_files(task_id)
            )
        if document is None:
            node.status, node.action = "miss", None
            digests = self.task_files(task_id)
            lock = resolve_task_lock(
                self.dataset,
                self.dataset.load_task(task_id),
                self.request.binding,
                digester=lambda path, _: (
                    digests.get(
                        path.relative_to(self.dataset.task_dir(task_id)).as_posix(), ""
                    ).removesuffix("+x")
                    or digest_file(path)
                ),
            )
            document = lock.document()
        node.payload["lock"] = document
        self.locks[task_id] = document

    def _cached_lock(self, node: Node) -> dict[str, Any] | None:
        output = node.action.outputs.get("lock") if node.action else None
        if output is None:
            return None
        try:
            document = json.loads(self.store.get_bytes(output.digest))
        except (ValueError, OSError, ConfigError):
            return None
        return document if isinstance(document, dict) else None

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
        self._planned_kinds = set(order)
        for kind in order:
            rule = self.rules[kind]
            for task_id, attempt in self.instances(rule):
                self.add(rule, task_id, attempt)
        return Plan(
            dataset=self.dataset,
            graph=self.graph,
            task_ids=self.task_ids,
            profiles_path=self._profiles_path(),
            key_inputs=lambda rule, task_id, given: self.inputs(rule, task_id, None, given),
        )


def plan(request: PlanRequest, store: CacheStore) -> Plan:
    """Build the graph for `request`; raises ConfigError/UsageError for invalid input."""
    request.binding.check()
    return _Planner(request, store, store.stat_cache).plan()
