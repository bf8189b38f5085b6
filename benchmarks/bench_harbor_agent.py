"""Harbor agent benchmark: what one terminus-2 attempt costs, and what a cold runner would.

    .venv/bin/python benchmarks/bench_harbor_agent.py [--attempts 6] [--max-concurrent 2]
        [--runs 3] [--json]

After one attempt that builds the task image (not counted), each run is one `ageval run`
process (as a user runs it) of `--attempts` fresh attempts of harbor-demo's `hello` with
`--agent harbor:terminus-2`, against the scripted mock model
(examples/mock-model/hello-terminus-2.yaml, per conversation). Reported, median of the runs:
wall seconds and CPU seconds per attempt (the process and everything it waited for: the
runner server and the runners it forked, Docker's client; not the engine's own CPU).
Beside it, a cold runner: `agent_runner.py describe terminus-2` in Harbor's Python, the
import of harbor and terminus-2 (LiteLLM) that a runner started per attempt would pay each
time; the attempt's CPU is printed as a ratio to it.

Needs the harbor venv (`.venv/bin/python -m agevalx.testing.harbor`), the engine and the
tmux bundle (`ageval agents build --all`).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from agevalx.agents.bundles import BUNDLES_ENV, bundles_dir  # noqa: E402
from agevalx.agents.mockllm import MockLLM  # noqa: E402
from agevalx.formats.harbor import agents  # noqa: E402
from agevalx.testing.harbor import install_harbor  # noqa: E402

HELLO = ROOT / "examples" / "datasets" / "harbor-demo" / "hello"
SCRIPT = ROOT / "examples" / "mock-model" / "hello-terminus-2.yaml"
AGENT = "harbor:terminus-2"
MODEL = "openai/gpt-5.4-mini"


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cold_runner(python: str) -> float:
    """CPU seconds of one `agent_runner.py describe terminus-2`: a runner's imports."""
    before = children_cpu()
    subprocess.run(
        [python, "-I", str(agents.RUNNER), "describe", "terminus-2"],
        capture_output=True,
        env=agents.runner_environment(),
        check=True,
    )
    return children_cpu() - before


def one_run(python: str, folder: Path, attempts: int, concurrent: int) -> dict[str, float]:
    """One `ageval run` of `attempts` fresh attempts (the cache in `folder`, the machine's
    bundles): wall and CPU seconds per attempt."""
    dataset = folder / "harbor-demo"
    if not dataset.exists():
        shutil.copytree(HELLO, dataset / "hello")
    script = yaml.safe_load(SCRIPT.read_text())
    with MockLLM(script, per_conversation=True) as mock:
        env = {
            **os.environ,
            "AGEVAL_HARBOR_PYTHON": python,
            "OPENAI_API_KEY": "sk-bench",
            "OPENAI_BASE_URL": f"http://localhost:{mock.port}/v1",
            "AGEVAL_CACHE_DIR": str(folder / "cache"),
            BUNDLES_ENV: str(bundles_dir()),
        }
        command = [sys.executable, "-m", "agevalx", "run", str(dataset), "--agent", AGENT]
        command += ["--model", MODEL, "-k", str(attempts), "--fresh"]
        command += ["--max-concurrent", str(concurrent), "--json"]
        before, started = children_cpu(), time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        wall, cpu = time.monotonic() - started, children_cpu() - before
    if done.returncode != 0:
        raise SystemExit(f"ageval run failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    statuses = [result["status"] for result in json.loads(done.stdout)["results"]]
    if statuses != ["PASS"] * attempts:
        raise SystemExit(f"not every attempt passed: {statuses}")
    return {"wall": wall / attempts, "cpu": cpu / attempts}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=6)
    parser.add_argument("--max-concurrent", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args(argv)
    python = str(Path(install_harbor()).parent / "python")
    cold = statistics.median(cold_runner(python) for _ in range(options.runs))
    with tempfile.TemporaryDirectory(prefix="bench-harbor-agent-") as temporary:
        folder = Path(temporary)
        one_run(python, folder, 1, 1)  # the task image built, the cache made: not counted
        runs = [
            one_run(python, folder, options.attempts, options.max_concurrent)
            for _ in range(options.runs)
        ]
    figures: dict[str, Any] = {
        "attempts": options.attempts,
        "max_concurrent": options.max_concurrent,
        "runs": options.runs,
        "cold_runner_cpu_s": round(cold, 3),
        "attempt_wall_s": round(statistics.median(run["wall"] for run in runs), 3),
        "attempt_cpu_s": round(statistics.median(run["cpu"] for run in runs), 3),
    }
    figures["attempt_cpu_over_cold_runner"] = round(figures["attempt_cpu_s"] / cold, 2)
    if options.json:
        print(json.dumps(figures))
        return 0
    print(f"terminus-2, {options.attempts} fresh attempts a run at {options.max_concurrent},")
    print(f"median of {options.runs} runs:")
    print(f"  cold runner (harbor + terminus-2 imported): {cold:.2f} CPU-s")
    print(
        f"  per attempt: {figures['attempt_wall_s']:.2f} s wall, "
        f"{figures['attempt_cpu_s']:.2f} CPU-s "
        f"({figures['attempt_cpu_over_cold_runner']:.2f}x a cold runner's imports)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
