"""Checkpoint benchmark: the cost of snapshotting /attempt/workspace (+ home) into the cache,
for workspaces of 10 MB, 100 MB and 1 GB (the first checkpoint both ways), and the second
checkpoint of the same workspace with one file changed, taken incrementally (only what
changed is read) beside a full re-read of the same state (what every checkpoint cost
before), with their ratio.

Each size is measured `--repeat` times (a new file changed each round); the figures are
the median with the range, and the load average is printed, since other work on the
machine moves them. Prints figures only.

    .venv/bin/python benchmarks/bench_checkpoint.py [--sizes 10,100,1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from agevalx.cache.store import CacheStore
from agevalx.cache.usage import disk_usage
from agevalx.environments.container import AttemptContainer, ContainerSpec
from agevalx.runner.snapshot import Snapshot, snapshot

FILE_MB = 10


def fill(container: AttemptContainer, megabytes: int) -> int:
    files = max(1, megabytes // FILE_MB)
    size = min(megabytes, FILE_MB)
    container.exec(
        f"for i in $(seq 1 {files}); do head -c {size}M /dev/urandom > f$i.bin; done",
        timeout=600,
    )
    return files


def stored_bytes(store: CacheStore) -> int:
    usage = disk_usage(store)
    return usage.objects.bytes + usage.trees.bytes


def timed(
    container: AttemptContainer, store: CacheStore, incremental: bool
) -> tuple[float, Snapshot]:
    started = time.perf_counter()
    taken = snapshot(container, store, incremental=incremental)
    return time.perf_counter() - started, taken


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):6.3f} s ({min(values):.3f}-{max(values):.3f})"


def measure(megabytes: int, repeat: int) -> None:
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="ageval-bench-ckpt-") as scratch:
        store = CacheStore(Path(scratch) / "cache")
        container = AttemptContainer.start(
            ContainerSpec(image="ageval/base:bookworm", name_hint=f"bench-{megabytes}")
        )
        try:
            files = fill(container, megabytes)
            with CacheStore(Path(scratch) / "cache-full") as empty:
                first_full_seconds, _ = timed(container, empty, incremental=False)
            shutil.rmtree(Path(scratch) / "cache-full")
            first_seconds, first = timed(container, store, incremental=True)
            first_stored = stored_bytes(store)
            incremental: list[float] = []
            full: list[float] = []
            read: list[tuple[int, int]] = []
            for round_ in range(repeat):
                changed = round_ % files + 1
                container.exec(f"head -c 1M /dev/urandom > f{changed}.bin")
                seconds, second = timed(container, store, incremental=True)
                incremental.append(seconds)
                read.append((second.files_read, second.bytes_read))
                seconds, reference = timed(container, store, incremental=False)
                full.append(seconds)
                if (second.workspace, second.home) != (reference.workspace, reference.home):
                    raise SystemExit("the incremental checkpoint differs from a full re-read")
            added = stored_bytes(store) - first_stored
        finally:
            container.remove()
    load_after = os.getloadavg()[0]
    mb = first.size / 1e6
    ratio = statistics.median(full) / statistics.median(incremental)
    files_read = "/".join(str(count) for count, _ in read)
    print(
        f"{megabytes:>5} MB workspace: first checkpoint {first_seconds:6.2f} s "
        f"({mb / first_seconds:6.1f} MB/s, {first_stored / 1e6:7.1f} MB stored; "
        f"as a full re-read into an empty cache {first_full_seconds:6.2f} s)\n"
        f"      one file changed, x{repeat}: incremental {spread(incremental)}, "
        f"full re-read {spread(full)}, full/incremental {ratio:5.1f}x; "
        f"files read per incremental checkpoint {files_read}, {added / 1e6:6.2f} MB added; "
        f"load average {load_before:.1f} -> {load_after:.1f} on {os.cpu_count()} CPUs"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000", help="workspace sizes in MB")
    parser.add_argument("--repeat", type=int, default=5, help="rounds per size")
    args = parser.parse_args()
    for size in (int(part) for part in args.sizes.split(",")):
        measure(size, args.repeat)


if __name__ == "__main__":
    main()
