"""run.py sandbox benchmark: one oracle attempt of a task with a run.py (an invocation, a
command, a file written), fresh each time, with run.py in its harness container (the default)
and in the ageval process (`--trust-run-py`), runs interleaved in the same minute. Prints the
medians, the overhead per attempt and the ratio.

    .venv/bin/python benchmarks/bench_sandbox.py [--runs 7] [--json]
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
import uuid
from pathlib import Path

TASK = f"with-run-py-{uuid.uuid4().hex[:8]}"
FILES = {
    "ageval.yaml": "format: ageval.dataset/1\ndataset_id: bench/sandbox\nversion: '1'\n",
    "profiles.yaml": (
        "format: ageval.profiles/1\nagent_profiles:\n  solver:\n    executor: oracle\n"
    ),
    f"tasks/{TASK}/task.yaml": (
        f"format: ageval.task/1\ntask_id: {TASK}\nagent_profiles: [{{id: solver}}]\n"
    ),
    f"tasks/{TASK}/run.py": (
        "def run(ctx):\n"
        "    ctx.invoke('solver', 'solve')\n"
        "    ctx.exec('cat out.txt')\n"
        "    ctx.write_file('note.txt', 'done')\n"
    ),
    f"tasks/{TASK}/environment/Dockerfile": "FROM ageval/base:bookworm\n",
    f"tasks/{TASK}/solution/solve.sh": "#!/bin/sh\necho ok > /attempt/workspace/out.txt\n",
    f"tasks/{TASK}/evaluator.py": (
        "def evaluate(ctx):\n"
        "    ok = (ctx.workspace / 'out.txt').read_text().strip() == 'ok'\n"
        "    return {'status': 'PASS' if ok else 'FAIL'}\n"
    ),
}


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    ageval = str(Path(sys.executable).with_name("ageval"))
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as scratch:
        dataset = Path(scratch) / "ds"
        for relative, text in FILES.items():
            path = dataset / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            if relative.endswith(".sh"):
                path.chmod(0o755)
        base = [ageval, "run", str(dataset), "--fresh", "--cache-dir", f"{scratch}/cache"]
        modes = {"sandboxed": base, "trusted": [*base, "--trust-run-py"]}
        for command in modes.values():
            timed(command)  # warm-up: the image, the lint entry, the evaluator's runtime
        times: dict[str, list[float]] = {name: [] for name in modes}
        for _ in range(args.runs):  # interleaved: both modes meet the same machine load
            for name, command in modes.items():
                times[name].append(timed(command))
    medians = {name: statistics.median(values) for name, values in times.items()}
    overhead = medians["sandboxed"] - medians["trusted"]
    figures = {
        "runs": args.runs,
        "sandboxed_s": round(medians["sandboxed"], 3),
        "trusted_s": round(medians["trusted"], 3),
        "overhead_s": round(overhead, 3),
        "ratio": round(medians["sandboxed"] / medians["trusted"], 3),
        "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(figures))
        return 0
    for name, values in times.items():
        print(
            f"{name:<10} attempt median {medians[name]:6.3f} s  "
            f"(min {min(values):.3f}, max {max(values):.3f}, {args.runs} runs)"
        )
    print(f"sandbox overhead per attempt: {overhead * 1000:.0f} ms  (x{figures['ratio']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
