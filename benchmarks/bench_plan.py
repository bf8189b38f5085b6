"""Planning benchmark: a fully cached 1,000-task x k=3 graph, planned by a cold process.

Generates a dataset of N trivial tasks, fills a fresh cache with every node (lock through
summary; the non-lock nodes get placeholder outputs, since only their action entries matter
to planning), then times `ageval graph show <dataset> -k 3 --json` as a whole new process, and
the bare interpreter start with `import agevalx.cli` for comparison. Prints figures only.

    .venv/bin/python benchmarks/bench_plan.py [--tasks 1000] [-k 3] [--runs 5]
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

from agevalx.cache.store import CacheStore
from agevalx.graph.execute import execute
from agevalx.graph.registry import substituted
from agevalx.operations.planning import PlanRequest, plan
from agevalx.testing.placeholders import placeholder

TASK_YAML = "format: ageval.task/1\ntask_id: {name}\nagent_profiles: [{{id: solver}}]\n"
FILES = {
    "evaluator.py": "def evaluate(ctx):\n    return {{'status': 'PASS', 'n': {index}}}\n",
    "run.py": "def run(ctx):\n    ctx.invoke('solver', ctx.prompt('task.md'))\n",
    "environment/Dockerfile": "FROM ageval/base:bookworm\n",
    "prompts/task.md": "Task number {index}.\n",
    "data/input.txt": "{index}\n",
}


def make_dataset(root: Path, tasks: int) -> None:
    (root / "ageval.yaml").parent.mkdir(parents=True, exist_ok=True)
    (root / "ageval.yaml").write_text(
        "format: ageval.dataset/1\ndataset_id: bench/plan\nversion: '1'\n"
    )
    (root / "profiles.yaml").write_text(
        "format: ageval.profiles/1\nagent_profiles:\n  solver:\n    executor: acp\n"
        "    options: {entry: agent}\n"
    )
    for index in range(tasks):
        name = f"task-{index:05d}"
        task = root / "tasks" / name
        (task / "task.yaml").parent.mkdir(parents=True)
        (task / "task.yaml").write_text(TASK_YAML.format(name=name))
        for relative, text in FILES.items():
            (task / relative).parent.mkdir(parents=True, exist_ok=True)
            (task / relative).write_text(text.format(index=index))
    # Age every file past the stat cache's racy window, as on a dataset that is not being edited.
    old = time.time() - 3600
    for path in root.rglob("*"):
        os.utime(path, (old, old))


def fill_cache(dataset: Path, cache: Path, k: int) -> int:
    with CacheStore(cache) as store:
        planned = plan(PlanRequest(dataset=dataset, k=k), store)
        executors = {kind: placeholder for kind in ("image", "run", "evaluate", "summary")}
        with substituted(executors):
            report = execute(planned, store, workers=2)
        assert report.ok, report.counts()
        return len(report.nodes)


def time_command(command: list[str], env: dict[str, str], runs: int) -> list[float]:
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)  # warm-up
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("-k", type=int, default=3)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ageval-bench-plan-") as scratch:
        dataset, cache = Path(scratch) / "dataset", Path(scratch) / "cache"
        started = time.perf_counter()
        make_dataset(dataset, args.tasks)
        nodes = fill_cache(dataset, cache, args.k)
        print(
            f"dataset: {args.tasks} tasks x k={args.k} = {nodes} nodes, cache filled in "
            f"{time.perf_counter() - started:.1f} s"
        )
        env = {**os.environ, "AGEVAL_CACHE_DIR": str(cache)}
        ageval = str(Path(sys.executable).with_name("ageval"))
        plan_times = time_command(
            [ageval, "graph", "show", str(dataset), "-k", str(args.k), "--json"], env, args.runs
        )
        import_times = time_command([sys.executable, "-c", "import agevalx.cli"], env, args.runs)
    plan_median = statistics.median(plan_times)
    import_median = statistics.median(import_times)
    print(
        f"plan, fully cached, cold process: median {plan_median:.3f} s "
        f"(min {min(plan_times):.3f}, max {max(plan_times):.3f}); goal < 1 s"
    )
    print(f"interpreter start + import agevalx.cli: median {import_median:.3f} s")
    print(
        f"planning itself: {plan_median - import_median:.3f} s "
        f"({(plan_median - import_median) / nodes * 1e6:.0f} us per node)"
    )


if __name__ == "__main__":
    main()
