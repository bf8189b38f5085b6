"""Lint benchmark: `lint_dataset` over a generated 1,000-task dataset, in both formats.

Generates N small tasks (a task.yaml or task.toml, an instruction, a Dockerfile, a verifier,
a solution and a data file; each tenth task with a compose file, each fiftieth with a
problem the checks flag) in a temporary directory, then times `lint_dataset` on it in this
process (every check, no Docker, no network). Prints the median wall seconds and the findings.

    .venv/bin/python benchmarks/bench_lint.py [--tasks 1000] [--runs 3] [--format ageval|harbor]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from agevalx.lint import lint_dataset

DIGEST = "sha256:" + "0123abcd" * 8
COMPOSE = (
    f"services:\n  db:\n    image: postgres:16.4@{DIGEST}\n"
    "    healthcheck:\n      test: [CMD, pg_isready]\n"
)
AGEVAL_FILES = {
    "task.yaml": "format: ageval.task/1\ntask_id: {name}\nagent_profiles: [{{id: solver}}]\n"
    "limits: {{wall_time_seconds: 600}}\n",
    "prompts/task.md": "Task number {index}: write the answer to answer.txt.\n",
    "environment/Dockerfile": "FROM ageval/base:bookworm\nRUN pip install rich==13.9.4\n",
    "evaluator.py": "def evaluate(ctx):\n    return {{'score': {index} % 2}}\n",
    "solution/solve.sh": "#!/bin/sh\necho {index} > answer.txt\n",
    "data/input.txt": "{index}\n",
}
HARBOR_FILES = {
    "task.toml": f'version = "1.0"\n\n[agent]\ntimeout_sec = 600.0\n\n[environment]\n'
    f'docker_image = "python:3.12-slim@{DIGEST}"\n',
    "instruction.md": "Task number {index}: write the answer to /app/answer.txt.\n",
    "environment/Dockerfile": f"FROM python:3.12-slim@{DIGEST}\nWORKDIR /app\n",
    "tests/test.sh": '#!/bin/bash\n[ "$(cat /app/answer.txt)" = {index} ] '
    "&& echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n",
    "solution/solve.sh": "#!/bin/bash\necho {index} > /app/answer.txt\n",
}


def make_dataset(root: Path, tasks: int, format_name: str) -> None:
    if format_name == "ageval":
        root.mkdir(parents=True)
        (root / "ageval.yaml").write_text(
            "format: ageval.dataset/1\ndataset_id: bench/lint\nversion: '1'\n"
        )
    files = AGEVAL_FILES if format_name == "ageval" else HARBOR_FILES
    for index in range(tasks):
        name = f"task-{index:05d}"
        task = root / "tasks" / name if format_name == "ageval" else root / name
        for relative, text in files.items():
            (task / relative).parent.mkdir(parents=True, exist_ok=True)
            (task / relative).write_text(text.format(name=name, index=index))
        if index % 10 == 0:
            (task / "environment" / "docker-compose.yaml").write_text(COMPOSE)
        if index % 50 == 0:
            (task / "environment" / "Dockerfile").write_text("FROM ubuntu\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--format", choices=("ageval", "harbor"), default=None)
    options = parser.parse_args()
    formats = [options.format] if options.format else ["ageval", "harbor"]
    with tempfile.TemporaryDirectory(prefix="ageval-bench-lint-") as temporary:
        for format_name in formats:
            root = Path(temporary) / format_name
            make_dataset(root, options.tasks, format_name)
            times = []
            for _ in range(options.runs):
                started = time.perf_counter()
                report = lint_dataset(root)
                times.append(time.perf_counter() - started)
            median = statistics.median(times)
            print(
                f"lint {format_name:6} {report.tasks} tasks: median {median:.2f} s "
                f"(min {min(times):.2f}, {options.runs} runs); {report.errors} errors, "
                f"{report.warnings} warnings"
            )


if __name__ == "__main__":
    main()
