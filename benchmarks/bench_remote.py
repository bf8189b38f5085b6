"""Push and pull of a job's worth of cached attempts through a local S3 server, and a
second machine rendering the job's leaderboard from the remote.

Usage: python benchmarks/bench_remote.py [--attempts 1000]

Fills a cache with N synthetic attempts (a run entry: activity and transcript blobs, a
workspace tree of three files, one of them shared by every attempt, a home tree; and an
evaluate entry with its result blob), records them as one job (100 tasks x N/100 attempts:
result documents, a summary entry, the job ref), starts moto's S3 server on 127.0.0.1, and
prints:

- push of the job to an empty bucket, push again (nothing to move), pull of the job into an
  empty cache (which also writes the dataset's .ageval/ views);
- the same bytes moved by raw s3fs calls (`pipe_file` / `cat_file`, same concurrency, no
  existence checks, no hashing, no signing): the floor the remote layer is measured against;
- bytes moved per attempt, and the ratios;
- a fresh machine's `ageval report --remote` of the dataset (a new process, an empty cache,
  no result file, `DOCKER_HOST` pointing nowhere so that any container would fail it): its
  wall time against the 10 s goal, and the same again once the leaderboard node is stored.

Figures only, no assertions. The server is a Python process on the same 2 cores, so
absolute times mostly measure moto; the ratios are the meaningful part.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from agevalx.cache import ActionManifest, CacheStore, OutputRef, TreeEntry, TreeManifest
from agevalx.cache.backend import ObjectId
from agevalx.cache.closure import WORKERS, closure
from agevalx.cache.remote import RemoteStore
from agevalx.cache.remote.config import add_remote
from agevalx.cache.remote.entry import RemoteEntry
from agevalx.cache.remote.s3server import CREDENTIALS, LocalS3Server
from agevalx.cache.transfer import TransferReport, all_entries
from agevalx.hashing import ALGORITHM, digest_json
from agevalx.operations.share import ShareReport, pull_jobs, push_jobs, record_job
from agevalx.results.metrics import overall_metrics, task_metrics
from agevalx.results.models import AttemptResult, JobSummary, NodeRef

ROOT = Path(__file__).resolve().parents[1]
DATASET = ROOT / "examples/datasets/minimal-demo"
DATASET_ID = "ageval/minimal-demo"
TASKS = 100

SHARED_FILE = b"# the task's README, identical in every workspace\n" * 40


def fill(store: CacheStore, attempts: int) -> None:
    """Write `attempts` run + evaluate entries of small, mostly distinct objects."""
    rng = random.Random(0)
    for index in range(attempts):
        with store.in_use():
            history = rng.randbytes(1500) + b"\n"
            activity = store.put_bytes(history)
            transcript = store.put_bytes(rng.randbytes(3000))
            solution = f"def solve():\n    return {index}\n".encode() * 10
            files = {
                "README.md": SHARED_FILE,
                "solution.py": solution,
                "notes.bin": rng.randbytes(600),
            }
            workspace = _tree(store, files)
            home = _tree(store, {".history": history})
            run = ActionManifest.create(
                "run",
                digest_json(["bench run", index]),
                {
                    "activity": OutputRef(digest=activity, type="blob"),
                    "transcript": OutputRef(digest=transcript, type="blob"),
                    "workspace": OutputRef(digest=workspace, type="tree"),
                    "home": OutputRef(digest=home, type="tree"),
                },
                {"attempt_id": f"a{index}", "seconds": 12.5},
            )
            store.put_action(run)
            result = store.put_bytes(f'{{"status":"PASS","score":1.0,"n":{index}}}'.encode())
            store.put_action(
                ActionManifest.create(
                    "evaluate",
                    digest_json(["bench evaluate", index]),
                    {"result": OutputRef(digest=result, type="blob")},
                    {"status": "PASS"},
                )
            )


def record(store: CacheStore, attempts: int) -> None:
    """Record the filled attempts as one job: results, a summary entry and the job ref."""
    k = max(1, attempts // TASKS)
    results = []
    for index in range(attempts):
        task, attempt = f"task-{index % TASKS:03d}", index // TASKS
        run_key = digest_json(["bench run", index])
        evaluate_key = digest_json(["bench evaluate", index])
        results.append(
            AttemptResult(
                attempt_id=f"{task}-{attempt}-{run_key[:12]}",
                dataset_id=DATASET_ID,
                task_id=task,
                attempt=attempt,
                status="PASS" if index % 3 else "FAIL",
                score=1.0 if index % 3 else 0.0,
                agents={"solver": "oracle"},
                models={"solver": None},
                config_digest=digest_json(["bench lock", task]),
                nodes=[
                    NodeRef(
                        id=f"run:{task}#{attempt}", kind="run", key=run_key, outcome="computed"
                    ),
                    NodeRef(
                        id=f"evaluate:{task}#{attempt}",
                        kind="evaluate",
                        key=evaluate_key,
                        outcome="computed",
                    ),
                ],
            )
        )
    tasks = {}
    for task in sorted({result.task_id for result in results}):
        mine = [result for result in results if result.task_id == task]
        statuses = [result.status for result in mine]
        tasks[task] = task_metrics(statuses, [r.score for r in mine], [None] * len(mine), k)
    summary_key = digest_json(["bench summary", attempts])
    summary = JobSummary(
        job_id=f"bench-{summary_key[:12]}",
        dataset_id=DATASET_ID,
        k=k,
        tasks=tasks,
        overall=overall_metrics(list(tasks.values())),
        attempts=[{"task": r.task_id, "attempt_id": r.attempt_id} for r in results],
        summary_key=summary_key,
    )
    with store.in_use():
        blob = store.put_bytes(summary.model_dump_json(indent=2).encode())
        store.put_action(
            ActionManifest.create(
                "summary", summary_key, {"summary": OutputRef(digest=blob, type="blob")}, {}
            )
        )
    record_job(store, results, summary, [], "1.0")


def render_from_remote(cache: Path, dataset: Path) -> tuple[float, bytes]:
    """`ageval report --remote shared DATASET` in a new process: its wall time and output."""
    out = cache.parent / "leaderboard.md"
    command = [sys.executable, "-m", "agevalx", "report", str(dataset), "--remote", "shared"]
    command += ["--cache-dir", str(cache), "-f", "markdown", "-o", str(out)]
    environment = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    started = time.perf_counter()
    subprocess.run(command, check=True, env=environment, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started, out.read_bytes()


def _tree(store: CacheStore, files: dict[str, bytes]) -> str:
    entries = tuple(
        TreeEntry(path=path, type="file", digest=store.put_bytes(data), size=len(data), mode=0o644)
        for path, data in sorted(files.items())
    )
    return store.put_tree_manifest(TreeManifest(entries=entries))


def payload(store: CacheStore) -> dict[str, bytes]:
    """Every object and entry `push` uploads, by its key in the bucket."""
    found = closure(store, all_entries(store))
    items: dict[str, bytes] = {}
    for obj in found.objects:
        area = "objects" if obj.type == "blob" else "trees"
        key = f"{area}/{ALGORITHM}/{obj.digest[:2]}/{obj.digest[2:]}"
        items[key] = store.read_object(ObjectId(obj.type, obj.digest))
    for action, manifest in found.entries.items():
        key = f"actions/{action.kind}/{action.key[:2]}/{action.key[2:]}"
        items[key] = RemoteEntry.wrap(manifest, None).canonical_bytes()
    return items


def raw_put_and_get(
    server: LocalS3Server, bucket: str, items: dict[str, bytes]
) -> tuple[float, float]:
    import s3fs

    fs = s3fs.S3FileSystem(endpoint_url=server.endpoint_url, skip_instance_cache=True)
    root = bucket.removeprefix("s3://")
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        started = time.perf_counter()
        list(pool.map(lambda kv: fs.pipe_file(f"{root}/{kv[0]}", kv[1]), items.items()))
        put = time.perf_counter() - started
        started = time.perf_counter()
        list(pool.map(lambda key: fs.cat_file(f"{root}/{key}"), items))
        get = time.perf_counter() - started
    return put, get


@dataclass
class Timed:
    """A share operation's report and its wall time."""

    share: ShareReport
    seconds: float

    @property
    def transfer(self) -> TransferReport:
        return self.share.transfer


def timed(remote: RemoteStore, operation: Callable[[], ShareReport]) -> tuple[Timed, int]:
    """Run a push or pull: its report with its wall time, and the remote requests it made."""
    before = remote.requests
    started = time.perf_counter()
    report = operation()
    return Timed(report, time.perf_counter() - started), remote.requests - before


def raw_listing(server: LocalS3Server, bucket: str) -> tuple[float, int]:
    """One s3fs listing of every key of the bucket: the floor of a push that moves nothing."""
    import s3fs

    fs = s3fs.S3FileSystem(endpoint_url=server.endpoint_url, skip_instance_cache=True)
    started = time.perf_counter()
    keys = fs.find(bucket.removeprefix("s3://"))
    return time.perf_counter() - started, len(keys)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=1000)
    args = parser.parse_args()
    os.environ.update(CREDENTIALS)
    with tempfile.TemporaryDirectory() as tmp, LocalS3Server() as server:
        root = Path(tmp)
        a = CacheStore(root / "a")
        started = time.perf_counter()
        fill(a, args.attempts)
        record(a, args.attempts)
        print(f"filled {args.attempts} attempts in {time.perf_counter() - started:.1f}s")
        items = payload(a)
        total = sum(map(len, items.values()))
        print(f"payload: {len(items)} files (objects + entries), {total / 1e6:.2f} MB")

        bucket = server.create_bucket("bench")
        with RemoteStore(bucket, options=server.options) as remote:
            first, first_calls = timed(remote, lambda: push_jobs(a, remote, dataset_id=DATASET_ID))
            second, second_calls = timed(
                remote, lambda: push_jobs(a, remote, dataset_id=DATASET_ID)
            )
        b = CacheStore(root / "b")
        dataset = root / "dataset"
        shutil.copytree(DATASET, dataset, ignore=shutil.ignore_patterns(".ageval"))
        with RemoteStore(bucket, options=server.options) as remote:
            shared, pulled_calls = timed(
                remote, lambda: pull_jobs(b, remote, dataset=dataset, dataset_id=DATASET_ID)
            )
            again, again_calls = timed(remote, lambda: pull_jobs(b, remote, dataset_id=DATASET_ID))
        pulled = shared.transfer
        assert first.transfer.ok and second.transfer.ok and pulled.ok and again.transfer.ok
        assert len(shared.share.views) == args.attempts
        raw_put, raw_get = raw_put_and_get(server, server.create_bucket("raw"), items)
        listed, keys = raw_listing(server, bucket)

        fresh = root / "fresh" / "cache"
        add_remote(CacheStore(fresh), "shared", bucket, options=server.options)
        empty = root / "fresh" / "dataset"
        shutil.copytree(DATASET, empty, ignore=shutil.ignore_patterns(".ageval"))
        cold, cold_bytes = render_from_remote(fresh, empty)
        other = root / "other" / "cache"
        add_remote(CacheStore(other), "shared", bucket, options=server.options)
        warm, warm_bytes = render_from_remote(other, empty)
        assert cold_bytes == warm_bytes and not (empty / ".ageval").exists()

    pushed = first.transfer
    per_attempt = pushed.bytes_copied / args.attempts
    rows = [
        ("push job (empty remote)", first, first_calls, raw_put),
        ("push job again (no-op)", second, second_calls, raw_put),
        ("pull job (empty cache)", shared, pulled_calls, raw_get),
        ("pull job again (no-op)", again, again_calls, raw_get),
    ]
    print(
        f"{'':28} {'seconds':>8} {'transfer':>9} {'requests':>9} {'MB moved':>9} "
        f"{'raw s3fs s':>11} {'vs raw':>7}"
    )
    for name, report, calls, raw in rows:
        moved, seconds = report.transfer.bytes_copied, report.transfer.seconds
        print(
            f"{name:28} {report.seconds:8.2f} {seconds:9.2f} {calls:9d} {moved / 1e6:9.2f} "
            f"{raw:11.2f} {report.seconds / raw:6.2f}x"
        )
    print(
        f"no-op push: {second.seconds / listed:.2f}x one raw s3fs listing of the bucket's "
        f"{keys} keys ({listed:.2f}s; S3 lists 1,000 keys a request)"
    )
    print(
        "seconds: the whole push_jobs / pull_jobs call (the job record, the refs and, for the "
        "first pull, the dataset's views); transfer: the entries and objects alone"
    )
    print(
        f"push: {pushed.entries_copied} entries + {pushed.objects_copied} objects, "
        f"{per_attempt:.0f} bytes per attempt ({pushed.objects_copied / args.attempts:.1f} "
        f"objects); re-push moved {second.transfer.bytes_copied} bytes; pull "
        f"{pulled.seconds / pushed.seconds:.2f}x the push time"
    )
    print(
        f"leaderboard of {args.attempts} attempts from the remote on a fresh machine: "
        f"{cold:.2f}s rendering the node ({cold / 10:.2f}x the 10 s goal), {warm:.2f}s "
        f"reading it back on another; 0 containers (DOCKER_HOST pointed nowhere); "
        f"{len(cold_bytes)} bytes of markdown, identical on both"
    )


if __name__ == "__main__":
    main()
