"""The driver's side of a clustered run: Docker nodes become Ray tasks, the rest stays here.

`Cluster.open(address, store)` connects to a Ray cluster (any address `ray.init` takes) and
is the scheduler's `dispatch`: a node whose kind needs Docker is submitted as a task that
needs one unit of the `docker` resource (`num_cpus=0`, `max_retries=0`: Ray never runs an
attempt again by itself), every other node is computed in this process as locally. The
worker uploads the outputs to the shared remote and returns the entry's digest; the driver
reads the entry through its layered cache (every object re-hashed).

The driver does not wait for a computed node's objects: it reads the entry alone (its
signature checked, when the remote is signed), hands it to the scheduler, and pulls the
objects in the background (each re-hashed, the entry written to its cache last, as any pull).
The workers need only the entry's key; a node of the driver (a summary, a leaderboard) and
the attempts' result files wait until every pull has landed (`settle`).

A try lost to the infrastructure (the worker process or its machine died) is run once more,
on another machine when there is one, and the node's report says why; a second loss is the
node's failure, `cluster_worker_lost`. Ctrl-C cancels every task (force: the workers are
ended) and removes the containers they left on every machine.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import networkx as nx

from agevalx.cache.backend import ActionId
from agevalx.cache.layered import LayeredStore
from agevalx.cache.manifest import ActionManifest
from agevalx.cache.remote.config import RemoteConfig
from agevalx.cache.store import CacheStore
from agevalx.cluster.checkout import publish_checkout
from agevalx.cluster.worker import NodeTask, compute
from agevalx.environments.container import SESSION
from agevalx.errors import AgevalError, UsageError
from agevalx.formats.base import dataset_of
from agevalx.graph.context import ExecutionContext
from agevalx.graph.execute import run_node
from agevalx.graph.keys import AGEVAL_VERSION
from agevalx.graph.nodes import Node
from agevalx.graph.plan import Plan

DOCKER_KINDS = frozenset({"image", "scoring_image", "scoring_host", "run", "evaluate", "replay"})
"""Node kinds whose action needs a Docker engine: they run on the workers."""
RESOURCE = "docker"
CLEANUP_SECONDS = 30.0
PULLERS = 2
"""Background pulls of computed nodes' objects at once (each is itself concurrent)."""


class Cluster:
    """A connection to a Ray cluster, dispatching one run's Docker nodes to it."""

    def __init__(self, store: LayeredStore) -> None:
        import ray
        import ray.exceptions as failures

        self.ray: Any = ray
        self.store = store
        self.lost: tuple[type[BaseException], ...] = (
            failures.WorkerCrashedError,
            failures.NodeDiedError,
            failures.LocalRayletDiedError,
            failures.ActorDiedError,
            failures.ObjectLostError,
            failures.OwnerDiedError,
        )
        self._compute = ray.remote(
            num_cpus=0, resources={RESOURCE: 1}, max_retries=0, retry_exceptions=False
        )(compute)
        self._cleanup = ray.remote(num_cpus=0, max_retries=0)(_remove_containers)
        self._trees: dict[int, str] = {}
        self._running: dict[Any, str] = {}
        self._lock = threading.Lock()
        self._puller = ThreadPoolExecutor(max_workers=PULLERS, thread_name_prefix="ageval-pull")
        self._pulls: dict[str, Future[ActionManifest | None]] = {}
        """The background pull of each computed node's objects, by node id."""
        self.cancelled = False
        self.phases: list[dict[str, float]] = []
        """Per computed node: seconds of each part of its trip (the worker's and the
        driver's), for the benchmark."""
        self.pulls: list[float] = []
        """Per computed node: seconds of the background pull of its objects."""
        self.overheads: list[float] = []
        """Per computed node: the driver's wall time minus the worker's executor time (what
        the cluster adds: scheduling, checkout, pulls of inputs, the entry's read)."""

    @property
    def capacity(self) -> int:
        """Units of the `docker` resource in the cluster: how many nodes can run at once."""
        return int(self.ray.cluster_resources().get(RESOURCE, 0))

    def __call__(self, node: Node, context: ExecutionContext) -> ActionManifest:
        if node.kind not in DOCKER_KINDS:
            self.settle()  # a node of the driver reads its parents' objects here
            return run_node(node, context)
        built = time.perf_counter()
        task = self._task(node, context)
        built = time.perf_counter() - built
        avoid: set[str] = set()
        for attempt in (1, 2):
            started = time.perf_counter()
            try:
                reply, ran_on = self._submit(task, avoid)
            except self.lost as exc:
                reason = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]}"
                if attempt == 2 or self.cancelled:
                    raise AgevalError(
                        "cluster_worker_lost",
                        f"{node.id} was lost twice with its worker ({reason})",
                        hint="check the workers' logs (ray logs) and their machines' health",
                    ) from None
                avoid |= self._dead_nodes()
                with context.lock:
                    context.retries[node.id] = f"infrastructure: {reason}; ran again"
                continue
            with context.lock:
                context.placements[node.id] = ran_on
            replied, requests = time.perf_counter(), self.store.remote.requests
            found = self._entry(node, reply)
            done = time.perf_counter()
            self.overheads.append(done - started - float(reply["seconds"]))
            self.phases.append(
                {
                    **reply.get("phases", {}),
                    "build": built,
                    "round_trip": replied - started,
                    "entry": done - replied,
                    "executor": float(reply["seconds"]),
                    "driver_requests": self.store.remote.requests - requests,
                }
            )
            return found
        raise AssertionError("unreachable")

    def _task(self, node: Node, context: ExecutionContext) -> NodeTask:
        graph = context.plan.graph
        names = sorted(nx.ancestors(graph, node.id))
        with context.lock:
            parents = {p: context.results[p] for p in graph.predecessors(node.id)}
        return NodeTask(
            node=node,
            ancestors=[graph.nodes[name]["node"] for name in names],
            edges=[(a, b) for a, b in graph.subgraph([*names, node.id]).edges],
            parents={name: (found.kind, found.key) for name, found in parents.items()},
            dataset=dataset_of(context.plan),
            tree=self._tree(context.plan),
            remote=RemoteConfig(url=self.store.remote.url, options=self.store.remote.options),
            release=AGEVAL_VERSION,
            session=SESSION,
        )

    def _tree(self, plan: Plan) -> str:
        with self._lock:
            if id(plan) not in self._trees:
                self._trees[id(plan)] = publish_checkout(
                    self.store, self.store.remote, plan.dataset.root
                )
            return self._trees[id(plan)]

    def _submit(self, task: NodeTask, avoid: set[str]) -> tuple[dict[str, Any], str]:
        options: dict[str, Any] = {}
        elsewhere = self._alive_workers() - avoid
        if avoid and elsewhere:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            target = sorted(elsewhere)[0]
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(target, soft=True)
        ref = self._compute.options(**options).remote(task)
        with self._lock:
            if self.cancelled:
                self.ray.cancel(ref, force=True)
            self._running[ref] = task.node.id
        try:
            reply: dict[str, Any] = self.ray.get(ref)
        finally:
            with self._lock:
                self._running.pop(ref, None)
        return reply, str(reply.get("ran_on", ""))

    def _entry(self, node: Node, reply: dict[str, Any]) -> ActionManifest:
        if "error" in reply:
            error = reply["error"]
            raise AgevalError(
                str(error.get("code", "node_failed")),
                str(error.get("message", "")),
                file=error.get("file"),
                field=error.get("field"),
                hint=error.get("hint"),
            )
        # Create-only: when two nodes of one key ran at once (two tasks' identical images),
        # the first entry stored is the one every machine reads, whatever this reply says.
        found = self.store.remote.read_entry(ActionId(node.kind, node.key))
        if found is None:
            raise _unusable(node.id, self.store.remote.location)
        with self._lock:
            self._pulls[node.id] = self._puller.submit(self._pull, node)
        return found

    def _pull(self, node: Node) -> ActionManifest | None:
        started = time.perf_counter()
        found = self.store.get_action(node.kind, node.key)
        with self._lock:
            self.pulls.append(time.perf_counter() - started)
        return found

    def settle(self) -> None:
        """Wait until the objects of every node computed so far are in the driver's cache
        (re-hashed, entry written last); a node whose pull failed fails the run here."""
        with self._lock:
            pulls = dict(self._pulls)
        lost = sorted(name for name, pull in pulls.items() if pull.result() is None)
        with self._lock:
            for name in pulls:
                self._pulls.pop(name, None)
        if lost:
            raise _unusable(", ".join(lost), self.store.remote.location)

    def _alive_workers(self) -> set[str]:
        return {
            str(item["NodeID"])
            for item in self.ray.nodes()
            if item.get("Alive") and item.get("Resources", {}).get(RESOURCE)
        }

    def _dead_nodes(self) -> set[str]:
        return {str(item["NodeID"]) for item in self.ray.nodes() if not item.get("Alive")}

    def interrupt(self) -> None:
        """Ctrl-C: cancel every task (ending its worker) and remove, on every machine, the
        containers of this run's session."""
        with self._lock:
            self.cancelled = True
            running = list(self._running)
        for ref in running:
            self.ray.cancel(ref, force=True)
        if running:
            self.ray.wait(running, num_returns=len(running), timeout=CLEANUP_SECONDS / 2)
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        cleanups = [
            self._cleanup.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)
            ).remote(SESSION)
            for node in sorted(self._alive_workers())
        ]
        self.ray.wait(cleanups, num_returns=len(cleanups), timeout=CLEANUP_SECONDS)

    def close(self) -> None:
        self._puller.shutdown(wait=True, cancel_futures=True)
        self.ray.shutdown()


def _unusable(nodes: str, remote: str) -> AgevalError:
    return AgevalError(
        "cluster_entry_unusable",
        f"a worker stored {nodes}, but the entry or an object it reaches on remote {remote} "
        "is missing or unusable",
        hint="see the remote's warnings; the node is recomputed by the next run",
    )


def _remove_containers(session: str) -> int:
    """On one machine: remove the containers of `session`, and what ended workers left."""
    from agevalx.environments.container import join_session, remove_session_containers
    from agevalx.environments.owners import reap_orphans

    join_session(session)
    removed = remove_session_containers()
    return removed + len(reap_orphans().containers)


@contextmanager
def connected(address: str, store: CacheStore) -> Iterator[Cluster]:
    """A `Cluster` over `address` for a run whose cache is `store` (it must have a remote)."""
    if not isinstance(store, LayeredStore):
        raise UsageError(
            "cluster_needs_remote",
            "--cluster needs a shared remote cache: the workers read inputs from it and write "
            "outputs to it",
            field="--cluster",
            hint="pass --remote NAME or URL (or set $AGEVAL_REMOTE); see docs/scale-out.md",
        )
    if store.remote.read_only:
        raise UsageError(
            "cluster_remote_read_only",
            f"remote {store.remote.location} is read-only: the workers could not store outputs",
            field="--remote",
            hint="use a remote the workers may write to",
        )
    ray = _import_ray()
    _messages_to_stderr()
    try:
        _init(ray, address)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        _forget_connection(ray)
        raise UsageError(
            "cluster_unreachable",
            f"cannot connect to the Ray cluster at {address}: {exc}",
            field="--cluster",
            hint=_unreachable_hint(str(exc)),
        ) from None
    cluster = Cluster(store)
    try:
        if cluster.capacity < 1:
            raise UsageError(
                "cluster_has_no_docker",
                f"no node of the Ray cluster at {address} advertises a {RESOURCE!r} resource",
                field="--cluster",
                hint="start the workers with: ray start --address HEAD --resources "
                "'{\"docker\": N}'",
            )
        yield cluster
    finally:
        cluster.close()


SERVER_FAILURE = "Initialization failure from server"
"""How a `ray://` connection fails when the head's client server for this driver did not come
up (it starts one process per driver); a second one, on another port, usually does."""


def _unreachable_hint(said: str) -> str:
    if SERVER_FAILURE in said:
        return (
            "the head's Ray Client server for this driver died as it started, twice: start "
            "the head with GRPC_ENABLE_FORK_SUPPORT=0 in its environment, or pass the head's "
            "HOST:PORT instead of ray://; see docs/scale-out.md"
        )
    return (
        "start a head with `ray start --head` and pass its HOST:PORT (or ray://HOST:PORT); "
        "see docs/scale-out.md"
    )


def _init(ray: Any, address: str) -> None:
    """`ray.init` of `address`; a `ray://` driver whose client server failed to start is
    connected once more."""
    for attempt in (1, 2):
        try:
            ray.init(
                address=address, logging_level="ERROR", log_to_driver=False, **_joining(address)
            )
            return
        except ConnectionError as exc:
            if attempt == 2 or SERVER_FAILURE not in str(exc):
                raise
            _forget_connection(ray)


def _forget_connection(ray: Any) -> None:
    """After a failed `ray.init`, drop what it set up (a Ray Client session half made): the
    next connection of this process (a notebook's, a test's) would otherwise find it and
    fail on it."""
    with contextlib.suppress(Exception):
        ray.shutdown()


def _joining(address: str) -> dict[str, str]:
    """A head on this machine's loopback (127.0.0.2, ...: Ray rewrites 127.0.0.1 itself) is
    joined as that address, since it is this driver's node too."""
    host = address.rpartition(":")[0]
    return {"_node_ip_address": host} if "://" not in address and host.startswith("127.") else {}


def _messages_to_stderr() -> None:
    """Ray's driver prints the cluster's error messages (a node marked dead, ...) on stdout,
    which must carry only ageval's output (`--json`): send them to stderr."""
    import ray._private.worker as driver

    printing = getattr(driver, "print_to_stdstream", None)
    if printing is None or getattr(printing, "ageval_stderr", False):
        return

    def to_stderr(data: dict[str, Any], ignore_prefix: bool) -> None:
        printing({**data, "is_err": True}, ignore_prefix)

    to_stderr.ageval_stderr = True  # type: ignore[attr-defined]
    driver.print_to_stdstream = to_stderr


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UsageError(
            "cluster_needs_ray",
            "--cluster needs Ray, which is not installed",
            field="--cluster",
            hint="pip install 'agevalx[ray]'",
        ) from None
    return ray
