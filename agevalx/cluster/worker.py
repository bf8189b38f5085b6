"""What a cluster worker runs for one node: the node's context rebuilt from the shared remote,
its executor run against this machine's Docker engine, its outputs uploaded create-only.

The task carries the node, its ancestors (the lock document among them), the keys of its
parents' entries and the digest of the dataset's tree; everything else comes from the remote
through a cache of this machine (`$AGEVAL_CACHE_DIR`, else the default), each object
re-hashed. Credentials and the signing key come from the worker's own environment, never from
the task. The reply is the stored entry's digest (or a coded error), never the outputs.
"""

from __future__ import annotations

import copy
import json
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agevalx.cache.backend import ActionId
from agevalx.cache.layered import LayeredStore
from agevalx.cache.location import default_cache_dir
from agevalx.cache.manifest import ActionManifest
from agevalx.cache.remote.config import RemoteConfig
from agevalx.cache.remote.entry import signing_key_from_env
from agevalx.cache.remote.store import RemoteStore
from agevalx.cluster.checkout import checkout
from agevalx.environments.container import join_session
from agevalx.errors import AgevalError
from agevalx.formats.base import Dataset
from agevalx.graph.context import ExecutionContext
from agevalx.graph.dag import NodeGraph
from agevalx.graph.execute import run_node
from agevalx.graph.keys import AGEVAL_VERSION
from agevalx.graph.nodes import Node
from agevalx.graph.plan import Plan
from agevalx.graph.registry import executor_for
from agevalx.graph.rules import load_rules
from agevalx.hashing import digest_bytes
from agevalx.images.build import IMAGE_KINDS, image_still_present
from agevalx.results.paths import attempt_dir, attempt_id

CHECKOUTS_DIR = "ageval-checkouts"
"""Beside the worker's cache: the dataset trees it restored, one directory per digest."""


@dataclass(frozen=True)
class NodeTask:
    """Everything a worker needs to compute one node."""

    node: Node
    ancestors: list[Node]
    """The node's ancestors (its parents, their parents, the task's lock)."""
    edges: list[tuple[str, str]]
    """The edges among the node and its ancestors."""
    parents: dict[str, tuple[str, str]]
    """The parents' entries, as (kind, key) by node id."""
    dataset: Dataset
    """The driver's dataset; its root is moved to this worker's checkout."""
    tree: str
    """Digest of the dataset's tree on the remote."""
    remote: RemoteConfig
    release: str
    """The driver's ageval release: keys and outputs must be made by the same code."""
    session: str
    """The driver's container session label (its Ctrl-C removes what this task starts)."""


def compute(task: NodeTask) -> dict[str, Any]:
    """Compute the task's node here: `{"digest": <entry digest>, "seconds": <executor time>,
    "phases": {...}}` or `{"error": {...}}`, with `ran_on`, this Ray node's id. `phases`
    holds the seconds of each step around the executor and the remote requests made."""
    import ray

    started = time.perf_counter()
    here = {"ran_on": ray.get_runtime_context().get_node_id()}
    try:
        phases: dict[str, float] = {}
        digest, seconds = _compute(task, phases)
        phases["task"] = time.perf_counter() - started
        return {"digest": digest, "seconds": seconds, "phases": phases, **here}
    except AgevalError as exc:
        return {"error": exc.to_dict(), **here}
    except Exception as exc:  # an executor bug is the node's failure, as it is locally
        message = f"{type(exc).__name__}: {exc}"
        return {"error": {"code": "node_failed", "message": message}, **here}


def _compute(task: NodeTask, phases: dict[str, float]) -> tuple[str, float]:
    mark = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal mark
        now = time.perf_counter()
        phases[name] = now - mark
        mark = now

    if task.release != AGEVAL_VERSION:
        raise AgevalError(
            "cluster_release_mismatch",
            f"this worker runs ageval {AGEVAL_VERSION}, the driver {task.release}",
            hint="install the same ageval release on the driver and every worker",
        )
    join_session(task.session)
    store = worker_store(task.remote)
    remote = store.remote
    requests = remote.requests
    lap("open")
    dataset = copy.copy(task.dataset)
    dataset.root = checkout(store, remote, task.tree, store.root.parent / CHECKOUTS_DIR)
    lap("checkout")
    context = ExecutionContext(plan=_plan(task, dataset), store=store)
    wanted = {name: ActionId(kind, key) for name, (kind, key) in task.parents.items()}
    held = store.get_actions(wanted.values())
    for name, action in sorted(wanted.items()):
        found = held[action]
        if found is None:
            raise AgevalError(
                "cluster_input_missing",
                f"{name} ({action.kind} {action.key}) is not on remote {remote.location}",
                hint="the driver uploads every node it computes; check the remote's health",
            )
        context.results[name] = found
    lap("inputs")
    _ensure_images(task, context)
    lap("images")
    scratch = scratch_dir(task.node, dataset.root)
    if scratch is not None:  # a lost try's leftovers here are not this attempt's state
        shutil.rmtree(scratch, ignore_errors=True)
    failures, warned = store.remote_stats.write_errors, len(store.remote_stats.warnings)
    started = time.perf_counter()
    try:
        manifest = run_node(task.node, context)
    finally:  # the outputs are in the cache: the journals written on the way are the driver's
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    seconds = time.perf_counter() - started
    mark = time.perf_counter()
    if store.remote_stats.write_errors > failures:
        warnings = "; ".join(w.message for w in store.remote_stats.warnings[warned:])
        raise AgevalError(
            "cluster_upload_failed",
            f"{task.node.id} was computed but not uploaded to {remote.location}",
            hint=warnings or "check the remote and the worker's credentials",
        )
    digest = entry_digest(manifest)
    lap("after")
    phases["requests"] = remote.requests - requests
    return digest, seconds


_STORES: dict[tuple[str, str, str, str], LayeredStore] = {}
"""This worker process's cache over each remote it was given, opened by its first task and
kept for the next ones (the remote's client, its connections and its VERSION check are paid
once per process, not once per node). A remote that tripped off is opened afresh."""
_STORES_LOCK = threading.Lock()


def worker_store(config: RemoteConfig) -> LayeredStore:
    """This machine's cache (`$AGEVAL_CACHE_DIR`, else the default) layered over the remote
    of `config`, with the signing key of this worker's environment."""
    root = default_cache_dir()
    key = signing_key_from_env()
    options = json.dumps(config.options, sort_keys=True, default=str)
    name = (str(root), config.url, options, digest_bytes(key) if key is not None else "")
    with _STORES_LOCK:
        found = _STORES.get(name)
        if found is not None and found.remote.available:
            return found
        if found is not None:
            found.close()
        store = LayeredStore(root, RemoteStore(config.url, options=config.options, signing_key=key))
        _STORES[name] = store
        return store


def scratch_dir(node: Node, root: Path) -> Path | None:
    """Where the node's executor writes its journals under the dataset (`.ageval/runs/<id>`):
    on a worker, that is the shared checkout, which keeps only the dataset's files."""
    if node.kind in ("run", "evaluate"):
        return attempt_dir(root, attempt_id(node))
    if node.kind == "replay":
        from agevalx.operations.replay import replay_id

        return attempt_dir(root, replay_id(node))
    return None


def entry_digest(manifest: ActionManifest) -> str:
    """What a worker returns and the driver checks: the digest of the entry's bytes."""
    return digest_bytes(manifest.canonical_bytes())


def _plan(task: NodeTask, dataset: Dataset) -> Plan:
    graph = NodeGraph()
    for node in [*task.ancestors, task.node]:
        graph.add(node)
    for parent, child in task.edges:
        graph.link(parent, child)
    return Plan(dataset=dataset, dag=graph, task_ids=dataset.task_ids)


def _ensure_images(task: NodeTask, context: ExecutionContext) -> None:
    """Build the parent images this machine's engine lacks (another worker built them)."""
    rules = load_rules()
    for name, found in list(context.results.items()):
        if found.kind in IMAGE_KINDS and not image_still_present(dict(found.meta)):
            parent = context.plan.node(name)
            executor_for(rules[parent.kind])(parent, context)
