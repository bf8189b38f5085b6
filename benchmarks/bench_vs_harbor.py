"""ageval against the real Harbor on the same generated Harbor tasks, serially and at 4.

    .venv/bin/python benchmarks/bench_vs_harbor.py [--tasks 6] [--concurrency 4] [--rounds 1]

Each task is trivial (the image `ageval/base:bookworm`, the oracle writes a file, tests/test.sh
checks it and writes the reward). Both tools first run one task to warm up (ageval locks the
dataset and builds its images; Harbor starts its compose project once); then each runs every
task with one trial at a time and with `--concurrency` at once, ageval with `--fresh` (new
samples: every attempt runs, nothing is reused). Printed: each trial's own duration (as each
tool records it), the job's wall time per trial, and Harbor's per trial over ageval's.
Harbor is the pinned `harbor` package in its own venv (`agevalx.testing.harbor`); when it
cannot be installed the benchmark says why and stops.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from agevalx.testing.harbor import HarborUnavailable, install_harbor, run_offline

TASK_FILES = {
    "task.toml": (
        "[agent]\ntimeout_sec = 60.0\n\n[verifier]\ntimeout_sec = 60.0\n\n"
        '[environment]\ndocker_image = "ageval/base:bookworm"\n'
    ),
    "instruction.md": "Write {task_id} into /tmp/answer.txt.\n",
    "solution/solve.sh": "#!/bin/bash\necho {task_id} > /tmp/answer.txt\n",
    "tests/test.sh": (
        "#!/bin/bash\n"
        'if [ "$(cat /tmp/answer.txt 2>/dev/null)" = "{task_id}" ]; '
        "then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"
    ),
}
GOALS = {1: 15.0, 4: 10.0}
"""Harbor's time per trial over ageval's, wanted at each concurrency (issue 19)."""


def write_dataset(root: Path, tasks: int) -> list[str]:
    names = [f"task-{index:03d}" for index in range(tasks)]
    for task_id in names:
        for relative, template in TASK_FILES.items():
            path = root / task_id / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(template.replace("{task_id}", task_id))
            if path.suffix == ".sh":
                path.chmod(0o755)
    return names


def ageval(dataset: Path, cache: Path, *argv: str) -> tuple[float, list[float]]:
    """One `ageval run` of the dataset: its wall time and each attempt's recorded seconds."""
    command = [str(Path(sys.executable).with_name("ageval")), "run", str(dataset), *argv]
    command += ["--agent", "oracle", "--cache-dir", str(cache), "--json"]
    started = time.perf_counter()
    env = {**os.environ, "AGEVAL_COMMAND_MEMO": "0"}  # the pipeline's time, never a replay
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"ageval {' '.join(argv)} failed: {done.stdout[-1500:]}{done.stderr}")
    results = json.loads(done.stdout)["results"]
    if any(result["score"] != 1.0 for result in results):
        raise SystemExit(f"an ageval attempt did not score 1: {results}")
    seconds = [sum((result.get("seconds") or {}).values()) for result in results]
    return elapsed, seconds


def harbor(
    program: Path, dataset: Path, jobs: Path, job: str, workers: int, tasks: list[str]
) -> tuple[float, list[float]]:
    """One `harbor run` of `tasks`: its wall time and each trial's duration."""
    argv = [str(program), "run", "-p", str(dataset), "-a", "oracle", "-n", str(workers)]
    argv += ["-o", str(jobs), "--job-name", job, "-q", "-y"]
    argv += [option for task in tasks for option in ("-i", task)]
    env = {key: value for key, value in os.environ.items() if not key.startswith("AGEVAL_")}
    started = time.perf_counter()
    done = run_offline(argv, 3600, cwd=jobs.parent, env=env)
    elapsed = time.perf_counter() - started
    trials = [json.loads(path.read_text()) for path in (jobs / job).glob("*/result.json")]
    rewards = [((trial.get("verifier_result") or {}).get("rewards") or {}) for trial in trials]
    if len(trials) != len(tasks) or any(reward.get("reward") != 1 for reward in rewards):
        raise SystemExit(f"harbor {job} did not reward every task: {done.stdout[-1500:]}")
    return elapsed, [_duration(trial) for trial in trials]


def _duration(trial: dict[str, object]) -> float:
    started, finished = trial.get("started_at"), trial.get("finished_at")
    if not isinstance(started, str) or not isinstance(finished, str):
        return float("nan")
    return (datetime.fromisoformat(finished) - datetime.fromisoformat(started)).total_seconds()


def describe(seconds: list[float]) -> str:
    median = statistics.median(seconds)
    return f"trials median {median:6.2f} s (min {min(seconds):.2f}, max {max(seconds):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=1, help="timed runs per setting (median)")
    args = parser.parse_args()
    try:
        program = install_harbor()
    except HarborUnavailable as exc:
        print(f"skipped: {exc}")
        return
    with tempfile.TemporaryDirectory(prefix="ageval-bench-harbor-") as scratch:
        root = Path(scratch)
        dataset, cache, jobs = root / "dataset", root / "cache", root / "jobs"
        names = write_dataset(dataset, args.tasks)
        jobs.mkdir()
        print(f"{args.tasks} trivial Harbor tasks, oracle; {os.cpu_count()} CPUs, "
              f"load average {os.getloadavg()[0]:.1f} at start")  # fmt: skip
        ageval(dataset, cache, "--task", names[0])
        harbor(program, dataset, jobs, "warm-up", 1, names[:1])
        ratios: dict[int, float] = {}
        for workers in (1, args.concurrency):
            ours, theirs = [], []
            for round_ in range(args.rounds):
                wall, trials = ageval(dataset, cache, "--fresh", "--max-concurrent", str(workers))
                ours.append(wall / args.tasks)
                print(f"ageval -n {workers}: {wall:7.2f} s  {wall / args.tasks:6.2f} s/trial  "
                      f"{describe(trials)}")  # fmt: skip
                job = f"n{workers}-{round_}"
                wall, trials = harbor(program, dataset, jobs, job, workers, names)
                theirs.append(wall / args.tasks)
                print(f"harbor -n {workers}: {wall:7.2f} s  {wall / args.tasks:6.2f} s/trial  "
                      f"{describe(trials)}")  # fmt: skip
            ratios[workers] = statistics.median(theirs) / statistics.median(ours)
        for workers, ratio in ratios.items():
            goal = GOALS.get(workers if workers == 1 else 4)
            print(f"-n {workers}: ageval {ratio:5.1f}x faster per trial than Harbor   goal {goal}x")
        print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
