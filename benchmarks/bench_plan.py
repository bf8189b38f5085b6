"""Planning benchmark: a fully cached 1,000-task x k=3 graph, planned by a cold process.

Generates a dataset of N trivial tasks, fills a fresh cache with every node (lock through
summary; the image, run and evaluate nodes get placeholder outputs that a run reads back as
passing attempts, see `agevalx.testing.placeholders`), then times
`ageval graph show <dataset> -k 3 --json` as a whole new process, beside the bare interpreter
(`python -c pass`) and the interpreter with `import agevalx.cli`. With `--run` it also times
`ageval run <dataset> -k 3` of the same job once a first run has written its views (the
make-like no-op: every node reused; it needs the Docker engine, which it asks whether the
cached image exists). Prints median wall and CPU (user + sys) seconds and ratios; on a loaded
machine the CPU figures and the ratios are the ones to compare. `--keep DIR` keeps (and on a
later run reuses) the generated dataset and filled cache, which take minutes to make.

    .venv/bin/python benchmarks/bench_plan.py [--tasks 1000] [-k 3] [--runs 5] [--keep DIR]
        [--run]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from agevalx.cache.store import CacheStore
from agevalx.graph.execute import execute
from agevalx.graph.registry import substituted
from agevalx.operations.planning import PlanRequest, plan
from agevalx.testing.placeholders import RUNNABLE
from agevalx.testing.processes import child_environment, time_command

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
        with substituted(RUNNABLE):
            report = execute(planned, store, workers=2)
        assert report.ok, report.counts()
        return len(report.nodes)


GOAL_SECONDS = 0.5


def prepare(root: Path, tasks: int, k: int) -> tuple[Path, Path]:
    """The dataset and the filled cache under `root`, made unless a kept run left them."""
    dataset, cache, marker = root / "dataset", root / "cache", _marker(root, tasks, k)
    if marker.exists():
        print(f"dataset: reusing {tasks} tasks x k={k} under {root}")
        return dataset, cache
    started = time.perf_counter()
    make_dataset(dataset, tasks)
    nodes = fill_cache(dataset, cache, k)
    marker.write_text(f"{nodes}\n")
    print(
        f"dataset: {tasks} tasks x k={k} = {nodes} nodes, cache filled in "
        f"{time.perf_counter() - started:.1f} s"
    )
    return dataset, cache


def _marker(root: Path, tasks: int, k: int) -> Path:
    """The file saying `root` holds a filled dataset (runnable outputs: `ready`)."""
    return root / f"ready-{tasks}x{k}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("-k", type=int, default=3)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="Keep (and reuse) the dataset and cache here.")
    parser.add_argument("--run", action="store_true", help="Also time a no-op `ageval run`.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ageval-bench-plan-") as scratch:
        root = args.keep or Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        dataset, cache = prepare(root, args.tasks, args.k)
        nodes = int(_marker(root, args.tasks, args.k).read_text())
        env = child_environment()
        env["AGEVAL_CACHE_DIR"] = str(cache)
        ageval = str(Path(sys.executable).with_name("ageval"))
        print(f"load average: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")
        figures = {
            "python -c pass": time_command([sys.executable, "-c", "pass"], env, args.runs),
            "import agevalx.cli": time_command(
                [sys.executable, "-c", "import agevalx.cli"], env, args.runs
            ),
            "plan (graph show --json)": time_command(
                [ageval, "graph", "show", str(dataset), "-k", str(args.k), "--json"],
                env,
                args.runs,
            ),
        }
        if args.run:  # time_command's warm-up is the first run, which writes the views
            figures["no-op run (ageval run)"] = time_command(
                [ageval, "run", str(dataset), "-k", str(args.k)], env, args.runs
            )
    medians = {
        name: (statistics.median(walls), statistics.median(cpus))
        for name, (walls, cpus) in figures.items()
    }
    base_wall, base_cpu = medians["python -c pass"]
    for name, (wall, cpu) in medians.items():
        walls = figures[name][0]
        print(
            f"{name:<26} wall median {wall:.3f} s (min {min(walls):.3f}, "
            f"{wall / base_wall:5.1f}x python)  cpu {cpu:.3f} s "
            f"({cpu / max(base_cpu, 1e-3):5.1f}x python)"
        )
    plan_wall, plan_cpu = medians["plan (graph show --json)"]
    import_wall, import_cpu = medians["import agevalx.cli"]
    print(
        f"beyond import agevalx.cli: wall {plan_wall - import_wall:.3f} s "
        f"({(plan_wall - import_wall) / nodes * 1e6:.0f} us per node), "
        f"cpu {plan_cpu - import_cpu:.3f} s ({(plan_cpu - import_cpu) / nodes * 1e6:.0f} us "
        f"per node)"
    )
    print(f"goal: the whole cold process <= {GOAL_SECONDS} s on a quiet machine")


if __name__ == "__main__":
    main()
