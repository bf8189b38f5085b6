"""Attempt benchmark: a trivial oracle attempt end to end, fresh and fully cached, beside the
raw `docker run --rm` of the same base image on this machine. Prints figures and ratios.

    .venv/bin/python benchmarks/bench_attempt.py [--runs 5]

"fresh" re-runs the run and evaluate nodes (`--fresh`: a new sample) with the image already
built; "cached" reuses every node (no container starts).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FILES = {
    "ageval.yaml": "format: ageval.dataset/1\ndataset_id: bench/attempt\nversion: '1'\n",
    "tasks/trivial/task.yaml": "format: ageval.task/1\ntask_id: trivial\n",
    "tasks/trivial/environment/Dockerfile": "FROM ageval/base:bookworm\n",
    "tasks/trivial/solution/solve.sh": "#!/bin/sh\necho ok > /attempt/workspace/out.txt\n",
    "tasks/trivial/evaluator.py": (
        "def evaluate(ctx):\n"
        "    ok = (ctx.workspace / 'out.txt').read_text().strip() == 'ok'\n"
        "    return {'status': 'PASS' if ok else 'FAIL'}\n"
    ),
}


def timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return time.perf_counter() - started


def series(command: list[str], env: dict[str, str], runs: int) -> list[float]:
    timed(command, env)  # warm-up
    return [timed(command, env) for _ in range(runs)]


def report(name: str, times: list[float]) -> float:
    median = statistics.median(times)
    print(f"{name:<34} median {median:6.3f} s  (min {min(times):.3f}, max {max(times):.3f})")
    return median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    ageval = str(Path(sys.executable).with_name("ageval"))
    with tempfile.TemporaryDirectory(prefix="ageval-bench-attempt-") as scratch:
        dataset = Path(scratch) / "dataset"
        for relative, text in FILES.items():
            (dataset / relative).parent.mkdir(parents=True, exist_ok=True)
            (dataset / relative).write_text(text)
        os.chmod(dataset / "tasks/trivial/solution/solve.sh", 0o755)
        env = {**os.environ, "AGEVAL_CACHE_DIR": str(Path(scratch) / "cache")}
        base = [ageval, "run", str(dataset), "--task", "trivial", "--agent", "oracle", "--json"]
        docker = report(
            "docker run --rm (raw)",
            series(["docker", "run", "--rm", "ageval/base:bookworm", "true"], env, args.runs),
        )
        fresh = report("ageval attempt, image built", series([*base, "--fresh"], env, args.runs))
        cached = report("ageval attempt, fully cached", series(base, env, args.runs))
    print(f"fresh / docker run: {fresh / docker:.1f}x   goal: fresh < 2.0 s")
    print(f"cached / fresh:     {cached / fresh:.2f}x   goal: cached < 0.3 s")


if __name__ == "__main__":
    main()
