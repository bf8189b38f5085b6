"""Start-up benchmark: interpreter start + `import agevalx.cli`, and `ageval --help`.

Each command runs as a new process, after one warm-up run (which also writes the bytecode
caches: PYTHONDONTWRITEBYTECODE is dropped from the children's environment, as an installed
ageval has its .pyc files). Prints the median wall time and CPU time (user + sys, from the
children's rusage) of each, and each as a multiple of the bare interpreter (`python -c pass`),
which is the figure that stays comparable on a loaded machine.

    .venv/bin/python benchmarks/bench_startup.py [--runs 10]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

GOAL_SECONDS = 0.15


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(command: list[str], env: dict[str, str], runs: int) -> tuple[float, float]:
    """Median wall and median CPU seconds of `command` over `runs` new processes."""
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)  # warm-up
    walls, cpus = [], []
    for _ in range(runs):
        cpu, started = child_cpu(), time.perf_counter()
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - started)
        cpus.append(child_cpu() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    python = sys.executable
    ageval = str(Path(python).with_name("ageval"))
    commands = {
        "python -c pass": [python, "-c", "pass"],
        "python -c 'import agevalx.cli'": [python, "-c", "import agevalx.cli"],
        "ageval --help": [ageval, "--help"],
        "ageval run --help": [ageval, "run", "--help"],
    }
    print(f"load average: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")
    base_wall = base_cpu = 0.0
    for name, command in commands.items():
        wall, cpu = measure(command, env, args.runs)
        if not base_wall:
            base_wall, base_cpu = wall, cpu
        print(
            f"{name:<32} wall {wall:.3f} s ({wall / base_wall:4.1f}x python)  "
            f"cpu {cpu:.3f} s ({cpu / max(base_cpu, 1e-6):4.1f}x python)"
        )
    print(f"goal: interpreter start + import agevalx.cli <= {GOAL_SECONDS} s on a quiet machine")


if __name__ == "__main__":
    main()
