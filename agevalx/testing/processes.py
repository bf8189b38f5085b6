"""Timing whole new processes, for the benchmarks that measure start-up and cold planning;
and the whole machine's CPU, for bench_floor and the suite's timeline."""

from __future__ import annotations

import os
import resource
import subprocess
import time
from pathlib import Path


def child_environment() -> dict[str, str]:
    """This environment without PYTHONDONTWRITEBYTECODE: an installed ageval has its bytecode
    compiled, and so do the timed children (their warm-up run writes it)."""
    return {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def machine_cpu_seconds() -> float:
    """CPU time the whole machine has spent busy since it booted (every core, /proc/stat)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


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
