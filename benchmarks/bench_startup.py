"""Start-up benchmark: interpreter start + `import agevalx.cli.app` (the parser), `ageval
--help`, and the imports of the run path (what a process running an attempt loads besides the CLI).

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
import statistics
import sys
from pathlib import Path

from agevalx.testing.processes import child_environment, time_command

GOAL_SECONDS = 0.15
RUN_PATH = "import agevalx.runner.stage, agevalx.operations.run, agevalx.evaluation.evaluate"
"""The modules an oracle attempt of an ageval dataset executes (run and evaluate nodes)."""


def measure(command: list[str], env: dict[str, str], runs: int) -> tuple[float, float]:
    """Median wall and median CPU seconds of `command` over `runs` new processes."""
    walls, cpus = time_command(command, env, runs)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    env = child_environment()
    python = sys.executable
    ageval = str(Path(python).with_name("ageval"))
    commands = {
        "python -c pass": [python, "-c", "pass"],
        "python -c 'import agevalx.cli.app'": [python, "-c", "import agevalx.cli.app"],
        "ageval --help": [ageval, "--help"],
        "ageval run --help": [ageval, "run", "--help"],
        "run path (oracle attempt)": [python, "-c", RUN_PATH],
        "run path + ACP executor": [python, "-c", f"{RUN_PATH}, agevalx.agents.acp.executor"],
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
    print(
        f"goal: interpreter start + import agevalx.cli.app <= {GOAL_SECONDS} s on a quiet machine"
    )


if __name__ == "__main__":
    main()
