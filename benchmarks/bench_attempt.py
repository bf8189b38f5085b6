"""Attempt benchmark: a trivial oracle attempt end to end, fresh and fully cached, beside the
raw `docker run --rm` of the same base image on this machine. Prints figures and ratios.

    .venv/bin/python benchmarks/bench_attempt.py [--runs 5]

"fresh" re-runs the run and evaluate nodes (`--fresh`: a new sample) with the image already
built; "cached" reuses every node (no container starts). The engine's operations on the
containers of the last fresh attempt's process (create, start, exec, archive, commit, destroy,
...: the attempt's, the scoring container and the placeholder holding its network namespace)
are counted from the engine's event stream.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

TASK = f"trivial-{uuid.uuid4().hex[:8]}"
OWNER_PID = "ageval.owner.pid"
"""The label naming the process that made a container (`agevalx.environments.owners`)."""
FILES = {
    "ageval.yaml": "format: ageval.dataset/1\ndataset_id: bench/attempt\nversion: '1'\n",
    f"tasks/{TASK}/task.yaml": f"format: ageval.task/1\ntask_id: {TASK}\n",
    f"tasks/{TASK}/environment/Dockerfile": "FROM ageval/base:bookworm\n",
    f"tasks/{TASK}/solution/solve.sh": "#!/bin/sh\necho ok > /attempt/workspace/out.txt\n",
    f"tasks/{TASK}/evaluator.py": (
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


def engine_operations(command: list[str], env: dict[str, str]) -> collections.Counter[str]:
    """The engine's events on the containers the process running `command` made (asked for
    after it ended: the engine replays its last events)."""
    since = time.time()
    run = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if run.wait() != 0:
        raise SystemExit(f"{' '.join(command)} failed")
    query = ["docker", "events", "--since", f"{since:.3f}", "--until", f"{time.time() + 1:.3f}"]
    query += ["--filter", "type=container", "--filter", f"label={OWNER_PID}={run.pid}"]
    found = subprocess.run(
        [*query, "--format", "{{json .}}"], capture_output=True, text=True, check=True
    )
    counts: collections.Counter[str] = collections.Counter()
    for line in found.stdout.splitlines():
        counts[str(json.loads(line).get("Action", "")).split(":")[0]] += 1
    return counts


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
        os.chmod(dataset / f"tasks/{TASK}/solution/solve.sh", 0o755)
        # the cached series times the pipeline's reuse, not the command memo's replay
        env = {
            **os.environ,
            "AGEVAL_CACHE_DIR": str(Path(scratch) / "cache"),
            "AGEVAL_COMMAND_MEMO": "0",
        }
        base = [ageval, "run", str(dataset), "--task", TASK, "--agent", "oracle", "--json"]
        docker = report(
            "docker run --rm (raw)",
            series(["docker", "run", "--rm", "ageval/base:bookworm", "true"], env, args.runs),
        )
        fresh = report("ageval attempt, image built", series([*base, "--fresh"], env, args.runs))
        operations = engine_operations([*base, "--fresh"], env)
        cached = report("ageval attempt, fully cached", series(base, env, args.runs))
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end")
    print(f"fresh / docker run: {fresh / docker:.1f}x   goal: fresh <= 0.8 s")
    print(f"cached / fresh:     {cached / fresh:.2f}x   goal: cached < 0.3 s")
    listed = ", ".join(f"{name} {count}" for name, count in sorted(operations.items()))
    print(f"engine operations per fresh attempt: {sum(operations.values())} ({listed})")


if __name__ == "__main__":
    main()
