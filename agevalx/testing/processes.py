"""Timing whole new processes, for the benchmarks that measure start-up and cold planning."""

from __future__ import annotations

import os
import resource
import subprocess
import time


def child_environment() -> dict[str, str]:
    """This environment without PYTHONDONTWRITEBYTECODE: an installed ageval has its bytecode
    compiled, and so do the timed children (their warm-up run writes it)."""
    return {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_command(
    command: list[str], env: dict[str, str], runs: int
) -> tuple[list[float], list[float]]:
    """Wall and CPU (user + sys) seconds of `runs` new processes of `command`, after one
    warm-up run."""
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)  # warm-up
    walls, cpus = [], []
    for _ in range(runs):
        cpu, started = _children_cpu(), time.perf_counter()
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - started)
        cpus.append(_children_cpu() - cpu)
    return walls, cpus
