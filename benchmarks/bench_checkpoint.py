"""Checkpoint benchmark: the cost of snapshotting /attempt/workspace (+ home) into the cache,
for workspaces of 10 MB, 100 MB and 1 GB, and what a second checkpoint of the same workspace
with one file changed stores (unchanged files are stored once). Prints figures only.

    .venv/bin/python benchmarks/bench_checkpoint.py [--sizes 10,100,1000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from agevalx.cache.store import CacheStore
from agevalx.cache.usage import disk_usage
from agevalx.environments.container import AttemptContainer, ContainerSpec
from agevalx.runner.snapshot import snapshot

FILE_MB = 10


def fill(container: AttemptContainer, megabytes: int) -> None:
    files = max(1, megabytes // FILE_MB)
    size = min(megabytes, FILE_MB)
    container.exec(
        f"for i in $(seq 1 {files}); do head -c {size}M /dev/urandom > f$i.bin; done",
        timeout=600,
    )


def stored_bytes(store: CacheStore) -> int:
    usage = disk_usage(store)
    return usage.objects.bytes + usage.trees.bytes


def measure(megabytes: int) -> None:
    with tempfile.TemporaryDirectory(prefix="ageval-bench-ckpt-") as scratch:
        store = CacheStore(Path(scratch) / "cache")
        container = AttemptContainer.start(
            ContainerSpec(image="ageval/base:bookworm", name_hint=f"bench-{megabytes}")
        )
        try:
            fill(container, megabytes)
            started = time.perf_counter()
            first = snapshot(container, store)
            first_seconds = time.perf_counter() - started
            first_stored = stored_bytes(store)
            container.exec("head -c 1M /dev/urandom > f1.bin")
            started = time.perf_counter()
            snapshot(container, store)
            second_seconds = time.perf_counter() - started
            added = stored_bytes(store) - first_stored
        finally:
            container.remove()
    mb = first.size / 1e6
    print(
        f"{megabytes:>5} MB workspace: first checkpoint {first_seconds:6.2f} s "
        f"({mb / first_seconds:6.1f} MB/s, {first_stored / 1e6:7.1f} MB stored); "
        f"second, one file changed: {second_seconds:6.2f} s, {added / 1e6:6.2f} MB added"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000", help="workspace sizes in MB")
    args = parser.parse_args()
    for size in (int(part) for part in args.sizes.split(",")):
        measure(size)


if __name__ == "__main__":
    main()
