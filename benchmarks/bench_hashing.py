"""Throughput of tree hashing: raw reads vs `hash_tree` cold vs `hash_tree` with a stat cache.

Usage: python benchmarks/bench_hashing.py [--size-mib 1024] [--small-files 2000]

Builds a tree of 1 MiB files (plus small ones) in a temporary directory, then prints
GB/s (10^9 bytes per second) for each measurement and their ratios. Goals: warm >= 1
GB/s, cold within 2x of raw read. Figures only, no assertions.

"Cold" drops each file from the page cache with posix_fadvise(DONTNEED) after fsync.
That cannot reach a hypervisor's cache, so on a VM cold reads may still be fast.
"""

from __future__ import annotations

import argparse
import mmap
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agevalx.cache.statcache import StatCache
from agevalx.cache.tree import hash_tree

MIB = 1 << 20
SMALL_FILE_BYTES = 4096
PAST_SECONDS = 3600


def make_tree(root: Path, big_files: int, small_files: int) -> list[Path]:
    """Write `big_files` files of 1 MiB and `small_files` of 4 KiB of random bytes."""
    rng = random.Random(0)
    files: list[Path] = []
    for index in range(big_files):
        files.append(_write(root / f"big/{index % 32:02d}/{index:05d}.bin", rng.randbytes(MIB)))
    for index in range(small_files):
        data = rng.randbytes(SMALL_FILE_BYTES)
        files.append(_write(root / f"small/{index % 64:02d}/{index:05d}.txt", data))
    return files


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    return path


def drop_page_cache(files: list[Path]) -> bool:
    """Ask the kernel to forget the files' pages; False if posix_fadvise is unavailable."""
    if not hasattr(os, "posix_fadvise"):
        return False
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return True


def read_all(files: list[Path]) -> None:
    """Read every byte of every file into one page-aligned buffer, with no hashing."""
    buffer = memoryview(mmap.mmap(-1, MIB))
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            while os.readv(fd, [buffer]):
                pass
        finally:
            os.close(fd)


def age(files: list[Path]) -> None:
    """Set mtimes an hour into the past, outside the stat cache's racy window."""
    past = time.time_ns() - PAST_SECONDS * 1_000_000_000
    for path in files:
        os.utime(path, ns=(past, past))


def best_of(repeat: int, action: Callable[[], object], before: Callable[[], object]) -> float:
    """The fastest of `repeat` timed runs of `action`, each after an untimed `before`."""
    times = []
    for _ in range(repeat):
        before()
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return min(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024, help="bytes in 1 MiB files")
    parser.add_argument("--small-files", type=int, default=2000, help="extra 4 KiB files")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (best kept)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ageval-bench-") as tmp:
        root = Path(tmp) / "tree"
        started = time.perf_counter()
        files = make_tree(root, args.size_mib, args.small_files)
        total = sum(path.stat().st_size for path in files)
        print(
            f"tree: {len(files)} files, {total / 1e9:.3f} GB, built in "
            f"{time.perf_counter() - started:.1f} s"
        )
        dropped = drop_page_cache(files)
        print(
            "page cache: "
            + (
                "dropped per file with posix_fadvise(DONTNEED)"
                if dropped
                else "NOT dropped (no posix_fadvise): cold figures are warm reads"
            )
        )
        n = args.repeat
        raw = best_of(n, lambda: read_all(files), lambda: drop_page_cache(files))
        cold = best_of(n, lambda: hash_tree(root), lambda: drop_page_cache(files))
        age(files)
        with StatCache(Path(tmp) / "statcache.db") as stat_cache:
            record = best_of(1, lambda: hash_tree(root, stat_cache=stat_cache), lambda: None)
            warm = best_of(n, lambda: hash_tree(root, stat_cache=stat_cache), lambda: None)
        report(total, raw=raw, cold=cold, record=record, warm=warm)


def report(total: int, **seconds: float) -> None:
    for name, elapsed in seconds.items():
        print(f"{name:>7}: {elapsed:8.3f} s  {total / elapsed / 1e9:8.2f} GB/s")
    print(f"cold / raw read time: {seconds['cold'] / seconds['raw']:.2f}x (goal <= 2x)")
    print(
        f"warm speed-up over cold: {seconds['cold'] / seconds['warm']:.1f}x (goal: warm >= 1 GB/s)"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
