"""Attempts per minute locally versus on a 2-worker Ray cluster of this machine, and the
overhead Ray adds to a node.

Usage: python benchmarks/bench_cluster.py [--k 2]

Makes the cluster tests' four-task dataset (two oracle tasks, two scripted-agent tasks with
checkpoints), starts moto's S3 server and a local Ray cluster (a head and two workers with
`docker: 1` each, on loopback; see agevalx/testing/raycluster.py), and prints:

- the job (4 tasks x k) computed locally, in a fresh cache, `max_concurrent_tasks: 2`;
- the same job computed on the cluster (a fresh driver cache, an empty remote, the workers'
  own caches), the driver keeping 2 nodes in flight;
- attempts per minute of both;
- Ray's overhead per node: the mean and the maximum, over the job's Docker nodes, of the
  driver's wall time for the node minus the worker's executor time (scheduling, the task's
  transfer, the worker's checkout and pulls of the parents, the driver's read of the entry),
  and the round trip of an empty task on a warm worker. Target: under 100 ms per node.

Figures only, no assertions. Both "workers" share this machine's cores and Docker engine, so
the cluster cannot be faster here; the overhead is what a many-machine run pays per node.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from agevalx.cache.layered import LayeredStore
from agevalx.cache.remote.s3server import CREDENTIALS, LocalS3Server
from agevalx.cache.remote.store import RemoteStore
from agevalx.cache.store import CacheStore
from agevalx.cluster.dispatch import connected
from agevalx.environments.container import remove_session_containers
from agevalx.graph.execute import execute
from agevalx.operations.planning import PlanRequest, plan
from agevalx.testing.datasets import job_of_tasks
from agevalx.testing.raycluster import HOST, LocalRayCluster

ROOT = Path(__file__).resolve().parents[1]
RUNCASES = ROOT / "tests/integration/data/runcases"
TASKS = {
    "echo-pass": "echo-pass",
    "three-steps": "three-steps",
    "echo-again": "echo-pass",
    "steps-again": "three-steps",
}


def make_dataset(target: Path) -> Path:
    return job_of_tasks(RUNCASES, target, TASKS)


def timed_job(dataset: Path, store: CacheStore, k: int, dispatch: object = None) -> float:
    planned = plan(PlanRequest(dataset=dataset, k=k), store)
    started = time.perf_counter()
    try:
        if dispatch is None:
            report = execute(planned, store, workers=2)
        else:
            report = execute(planned, store, workers=2, dispatch=dispatch)  # type: ignore[arg-type]
            dispatch.settle()  # type: ignore[attr-defined]
    finally:
        remove_session_containers()
    elapsed = time.perf_counter() - started
    if not report.ok:
        failed = [item.to_dict() for item in report.nodes if item.outcome == "failed"]
        raise SystemExit(f"the job failed: {failed}")
    return elapsed


def empty_round_trip(samples: int = 20) -> float:
    import ray

    @ray.remote(num_cpus=0, resources={"docker": 1}, max_retries=0)
    def nothing() -> int:
        return 0

    ray.get([nothing.remote() for _ in range(4)])  # warm both workers
    started = time.perf_counter()
    for _ in range(samples):
        ray.get(nothing.remote())
    return (time.perf_counter() - started) / samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--k", type=int, default=2)
    parser.add_argument("--cluster-only", action="store_true", help="skip the local job")
    parser.add_argument("--nodes", action="store_true", help="print each node's parts")
    args = parser.parse_args()
    attempts = len(TASKS) * args.k
    os.environ.update(CREDENTIALS)
    work = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    try:
        if not args.cluster_only:
            with CacheStore(work / "local-cache") as store:
                local = timed_job(make_dataset(work / "local"), store, args.k)
            rate = attempts / local * 60
            print(f"local:   {attempts} attempts in {local:.1f} s = {rate:.1f}/min")
        workers = {
            f"worker-{i}": {"AGEVAL_CACHE_DIR": str(work / f"worker-{i}/cache")} for i in (1, 2)
        }
        with LocalS3Server() as server, LocalRayCluster(workers) as cluster:
            bucket = server.create_bucket("bench-cluster")
            remote = RemoteStore(bucket, options=server.options)
            store = LayeredStore(work / "driver-cache", remote)
            with store, connected(cluster.address, store) as ray_cluster:
                assert HOST in cluster.address
                clustered = timed_job(make_dataset(work / "cluster"), store, args.k, ray_cluster)
                trip = empty_round_trip()
            overheads = ray_cluster.overheads
            phases = ray_cluster.phases
        print(
            f"cluster: {attempts} attempts in {clustered:.1f} s = "
            f"{attempts / clustered * 60:.1f}/min (2 workers, docker: 1 each)"
        )
        print(
            f"ray overhead per node over {len(overheads)} Docker nodes: mean "
            f"{statistics.mean(overheads) * 1000:.0f} ms, median "
            f"{statistics.median(overheads) * 1000:.0f} ms, max {max(overheads) * 1000:.0f} ms"
        )
        print(f"empty task round trip on a warm worker: {trip * 1000:.1f} ms")
        pulls = ray_cluster.pulls
        print(
            f"driver's background pull of a computed node's objects (off the node's path): "
            f"median {statistics.median(pulls) * 1000:.0f} ms, max {max(pulls) * 1000:.0f} ms "
            f"over {len(pulls)} nodes"
        )
        names = sorted({name for item in phases for name in item})
        counts = ("requests", "driver_requests")
        if args.nodes:
            for overhead, item in zip(overheads, phases, strict=True):
                timed = [name for name in names if name not in counts]
                row = " ".join(f"{name}={item.get(name, 0.0) * 1000:.0f}" for name in timed)
                row += f" (requests: worker {item.get('requests', 0):.0f}, "
                row += f"driver {item.get('driver_requests', 0):.0f})"
                print(f"  node: overhead={overhead * 1000:.0f} {row}")
        parts = ", ".join(
            f"{name} {statistics.median(item.get(name, 0.0) for item in phases) * 1000:.0f}"
            for name in names
            if name not in counts
        )
        print(f"median ms per node: {parts}")
        for name in counts:
            values = [int(item.get(name, 0)) for item in phases]
            print(
                f"remote {name} per node: median {statistics.median(values):.0f}, "
                f"total {sum(values)}"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
