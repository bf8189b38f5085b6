"""Planning benchmark: a fully cached 1,000-task x k=3 graph, planned by a cold process.

Generates a dataset of N trivial tasks, fills a fresh cache with every node (lock through
summary; the image, run and evaluate nodes get placeholder outputs that a run reads back as
passing attempts, see `agevalx.testing.placeholders`), then times
`ageval graph show <dataset> -k 3 --json` as a whole new process, beside the bare interpreter
(`python -c pass`) and the interpreter with `import agevalx.cli.app` (the parser). With
`--run` it also times `ageval run <dataset> -k 3` of the same job once its views are written
(the make-like no-op: every node reused, no engine asked). Prints median wall and CPU (user +
sys) seconds and ratios; on a loaded machine the CPU figures and the ratios are the ones to
compare. `--keep DIR` keeps (and on a later run reuses) the generated dataset and filled
cache, which take minutes to make. Each command is timed three ways, all under the
benchmark's own `XDG_STATE_HOME`:
- as a user runs it, once it is kept in the command memo (`agevalx/cli/memo.py`: the runs
  before, `settle`, write the plan memo and the views; the timed runs check the command's
  witnesses and print its kept output);
- with the command memo off (`AGEVAL_COMMAND_MEMO=0`): the plan memo's work
  (`agevalx/graph/memo.py`);
- with both off (and `AGEVAL_PLAN_MEMO=0`): the planner's work.

With `--scale 1000,3000,10000` it instead plans a generated dataset of each size (made and
filled under `--keep DIR/scale-<tasks>`, reused later: the 10,000-task cache takes about ten
minutes to fill) and prints, per size, the median wall and CPU seconds, the CPU microseconds
per node and the peak resident memory of the planning process (its `ru_maxrss`; memo off): the
growth from one size to the next should be linear in nodes, and the peak below 1 GiB.

    .venv/bin/python benchmarks/bench_plan.py [--tasks 1000] [-k 3] [--runs 5] [--keep DIR]
        [--run] [--scale 1000,3000,10000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agevalx.cache.store import CacheStore
from agevalx.cli import memo as command_memo
from agevalx.fsutil import RACY_WINDOW_NS
from agevalx.graph import memo
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
GOAL_PEAK_BYTES = 1 << 30
"""The scale goal: a plan of 10,000 tasks x k=3 stays under 1 GiB resident."""


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


def settle(command: list[str], env: dict[str, str], state: Path) -> None:
    """Run `command` until it is kept in the command memo, as a user's third or fourth
    no-op is: the runs before write (the plan memo, the views and their stamp), and a run is
    kept only when nothing it read changed within the racy window before it began."""
    memos = state / "ageval" / "commands"
    shutil.rmtree(memos, ignore_errors=True)  # a memo kept before would answer, not be kept
    for _ in range(4):
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
        if memos.exists() and any(memos.iterdir()):
            print(f"{command[1]} {command[2]}: kept in the command memo")
            return
        time.sleep(RACY_WINDOW_NS / 1e9 + 0.2)
    print(f"{command[1]} {command[2]}: NOT kept in the command memo (AGEVAL_DEBUG=1 says why)")


def _marker(root: Path, tasks: int, k: int) -> Path:
    """The file saying `root` holds a filled dataset (runnable outputs: `ready`)."""
    return root / f"ready-{tasks}x{k}"


_MEASURER = """
import json, os, subprocess, sys, time
command, env, runs = json.loads(sys.argv[1])
subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
found = []
for _ in range(runs):
    started = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        sys.exit(f"{' '.join(command)} exited with {child.returncode}")
    found.append((wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024))
print(json.dumps(found))
"""
"""Times `runs` new processes of a command (after one warm-up) from its own small process.
A child's `ru_maxrss` counts what its parent had resident when it forked (Linux keeps the
pre-exec peak): measured from this process, which filled a cache of 80,000 nodes, the peak
of a small plan would read as this process's."""


def measure(command: list[str], env: dict[str, str], runs: int) -> list[tuple[float, float, int]]:
    """Wall and CPU (user + sys) seconds and peak resident bytes (`ru_maxrss`, KiB on Linux)
    of `runs` new processes of `command`, each read from its own `wait4`."""
    request = json.dumps([command, env, runs])
    output = subprocess.run(
        [sys.executable, "-c", _MEASURER, request], check=True, capture_output=True, text=True
    ).stdout
    return [(wall, cpu, int(peak)) for wall, cpu, peak in json.loads(output)]


def scale(sizes: list[int], k: int, runs: int, keep: Path, env: dict[str, str]) -> None:
    """Plan a generated dataset of each size in new processes; print time, time per node
    and peak memory, and how each grows against the smallest size."""
    ageval = str(Path(sys.executable).with_name("ageval"))
    base = statistics.median(cpu for _, cpu, _ in measure([sys.executable, "-c", "pass"], env, 5))
    rows = []
    for tasks in sizes:
        root = keep / f"scale-{tasks}"
        root.mkdir(parents=True, exist_ok=True)
        dataset, cache = prepare(root, tasks, k)
        nodes = int(_marker(root, tasks, k).read_text())
        command = [ageval, "graph", "show", str(dataset), "-k", str(k), "--json"]
        # the planner's own work: the memos (measured by the default mode) are off
        unmemoised = {memo.ENV_VAR: "0", command_memo.ENV_VAR: "0"}
        found = measure(command, {**env, "AGEVAL_CACHE_DIR": str(cache), **unmemoised}, runs)
        wall = statistics.median(wall for wall, _, _ in found)
        cpu = statistics.median(cpu for _, cpu, _ in found)
        peak = max(peak for _, _, peak in found)
        rows.append((tasks, nodes, wall, cpu, peak))
    print(f"load average: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")
    print(
        f"{'tasks':>6} {'nodes':>6} {'wall s':>7} {'cpu s':>7} {'x python':>8} {'us/node':>7} "
        f"{'vs first':>8} {'peak MiB':>8} {'KiB/node':>8}"
    )
    _, first_nodes, _, first_cpu, _ = rows[0]
    for tasks, nodes, wall, cpu, peak in rows:
        # `vs first`: CPU per node against the smallest size's (1.0: linear in nodes).
        print(
            f"{tasks:>6} {nodes:>6} {wall:>7.2f} {cpu:>7.2f} {cpu / max(base, 1e-3):>8.0f} "
            f"{cpu / nodes * 1e6:>7.0f} {(cpu / nodes) / (first_cpu / first_nodes):>8.2f} "
            f"{peak / (1 << 20):>8.0f} {peak / nodes / 1024:>8.1f}"
        )
    largest = rows[-1]
    verdict = "met" if largest[4] <= GOAL_PEAK_BYTES else "NOT met"
    print(
        f"goal: time linear in nodes (`vs first` stays near 1), peak of "
        f"{largest[0]} tasks <= 1 GiB: {verdict} ({largest[4] / (1 << 20):.0f} MiB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("-k", type=int, default=3)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="Keep (and reuse) the dataset and cache here.")
    parser.add_argument("--run", action="store_true", help="Also time a no-op `ageval run`.")
    parser.add_argument(
        "--scale",
        help="Comma-separated task counts (e.g. 1000,3000,10000): time and peak memory of "
        "planning each size, instead of the ratios above.",
    )
    args = parser.parse_args()
    if args.scale:
        sizes = sorted(int(size) for size in args.scale.split(","))
        with tempfile.TemporaryDirectory(prefix="ageval-bench-scale-") as scratch:
            keep = args.keep or Path(scratch)
            scale(sizes, args.k, args.runs, keep, child_environment())
        return
    with tempfile.TemporaryDirectory(prefix="ageval-bench-plan-") as scratch:
        root = args.keep or Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        dataset, cache = prepare(root, args.tasks, args.k)
        nodes = int(_marker(root, args.tasks, args.k).read_text())
        env = child_environment()
        env["AGEVAL_CACHE_DIR"] = str(cache)
        env["XDG_STATE_HOME"] = str(root / "state")  # the plan memo of this benchmark alone
        plan_memo_only = {**env, command_memo.ENV_VAR: "0"}
        unmemoised = {**plan_memo_only, memo.ENV_VAR: "0"}
        ageval = str(Path(sys.executable).with_name("ageval"))
        show = [ageval, "graph", "show", str(dataset), "-k", str(args.k), "--json"]
        print(f"load average: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")
        figures = {
            "python -c pass": time_command([sys.executable, "-c", "pass"], env, args.runs),
            "import agevalx.cli.app": time_command(
                [sys.executable, "-c", "import agevalx.cli.app"], env, args.runs
            ),
        }
        settle(show, env, root / "state")
        figures["plan (graph show --json)"] = time_command(show, env, args.runs)
        figures["plan, command memo off"] = time_command(show, plan_memo_only, args.runs)
        figures["plan, both memos off"] = time_command(show, unmemoised, args.runs)
        if args.run:
            run = [ageval, "run", str(dataset), "-k", str(args.k)]
            settle(run, env, root / "state")
            figures["no-op run (ageval run)"] = time_command(run, env, args.runs)
            figures["no-op run, command memo off"] = time_command(run, plan_memo_only, args.runs)
            figures["no-op run, both memos off"] = time_command(run, unmemoised, args.runs)
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
    plan_wall, plan_cpu = medians["plan, command memo off"]
    import_wall, import_cpu = medians["import agevalx.cli.app"]
    print(
        f"plan memo beyond import agevalx.cli.app: wall {plan_wall - import_wall:.3f} s "
        f"({(plan_wall - import_wall) / nodes * 1e6:.0f} us per node), "
        f"cpu {plan_cpu - import_cpu:.3f} s ({(plan_cpu - import_cpu) / nodes * 1e6:.0f} us "
        f"per node)"
    )
    print(f"goal: the whole cold process <= {GOAL_SECONDS} s on a quiet machine")


if __name__ == "__main__":
    main()
