"""Push and pull of a job's worth of cached attempts through a local S3 server.

Usage: python benchmarks/bench_remote.py [--attempts 1000]

Fills a cache with N synthetic attempts (a run entry: activity and transcript blobs, a
workspace tree of three files, one of them shared by every attempt, a home tree; and an
evaluate entry with its result blob), starts moto's S3 server on 127.0.0.1, and prints:

- push to an empty bucket, push again (nothing to move), pull into an empty cache;
- the same bytes moved by raw s3fs calls (`pipe_file` / `cat_file`, same concurrency, no
  existence checks, no hashing, no signing): the floor the remote layer is measured against;
- bytes moved per attempt, and the ratios.

Figures only, no assertions. The server is a Python process on the same 2 cores, so
absolute times mostly measure moto; the ratios are the meaningful part.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from agevalx.cache import ActionManifest, CacheStore, OutputRef, TreeEntry, TreeManifest
from agevalx.cache.backend import ObjectId
from agevalx.cache.closure import WORKERS, closure
from agevalx.cache.remote import RemoteStore
from agevalx.cache.remote.entry import RemoteEntry
from agevalx.cache.remote.s3server import CREDENTIALS, LocalS3Server
from agevalx.cache.transfer import all_entries, pull, push
from agevalx.hashing import ALGORITHM, digest_json

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
        print(f"filled {args.attempts} attempts in {time.perf_counter() - started:.1f}s")
        items = payload(a)
        total = sum(map(len, items.values()))
        print(f"payload: {len(items)} files (objects + entries), {total / 1e6:.2f} MB")

        bucket = server.create_bucket("bench")
        with RemoteStore(bucket, options=server.options) as remote:
            first = push(a, remote, all_entries(a))
            second = push(a, remote, all_entries(a))
        b = CacheStore(root / "b")
        with RemoteStore(bucket, options=server.options) as remote:
            pulled = pull(b, remote, all_entries(remote))
        assert first.ok and second.ok and pulled.ok
        raw_put, raw_get = raw_put_and_get(server, server.create_bucket("raw"), items)

    per_attempt = first.bytes_copied / args.attempts
    rows = [
        ("push (empty remote)", first.seconds, first.bytes_copied, raw_put),
        ("push again (all present)", second.seconds, second.bytes_copied, raw_put),
        ("pull (empty cache)", pulled.seconds, pulled.bytes_copied, raw_get),
    ]
    print(f"{'':28} {'seconds':>8} {'MB moved':>9} {'raw s3fs s':>11} {'vs raw':>7}")
    for name, seconds, moved, raw in rows:
        print(f"{name:28} {seconds:8.2f} {moved / 1e6:9.2f} {raw:11.2f} {seconds / raw:6.2f}x")
    print(
        f"push: {first.entries_copied} entries + {first.objects_copied} objects, "
        f"{per_attempt:.0f} bytes per attempt ({first.objects_copied / args.attempts:.1f} "
        f"objects); re-push moved {second.bytes_copied} bytes; pull "
        f"{pulled.seconds / first.seconds:.2f}x the push time"
    )


if __name__ == "__main__":
    main()
