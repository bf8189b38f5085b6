"""Small hostile datasets for the security tests, written into a test's tmp dir.

The "agent" of these tasks is the oracle: its solution/solve.sh is whatever a hostile agent
would run in the container. Each builder returns the dataset directory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agevalx.cli import main

AGEVAL_YAML = "format: ageval.dataset/1\ndataset_id: tests/hostile\nversion: '1'\n"
ORACLE_PROFILES = "format: ageval.profiles/1\nagent_profiles:\n  solver:\n    executor: oracle\n"


def write(root: Path, files: dict[str, str], executable: tuple[str, ...] = ()) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if relative in executable or relative.endswith(".sh"):
            path.chmod(0o755)
    return root


def ageval_task(
    root: Path,
    solve: str,
    evaluator: str,
    *,
    task: str = "hostile",
    profiles: str = ORACLE_PROFILES,
    task_yaml_extra: str = "",
) -> Path:
    """An ageval dataset of one task whose oracle runs `solve` (a shell script body)."""
    return write(
        root,
        {
            "ageval.yaml": AGEVAL_YAML,
            "profiles.yaml": profiles,
            f"tasks/{task}/task.yaml": (
                f"format: ageval.task/1\ntask_id: {task}\nagent_profiles: [{{id: solver}}]\n"
                + task_yaml_extra
            ),
            f"tasks/{task}/environment/Dockerfile": "FROM ageval/base:bookworm\n",
            f"tasks/{task}/solution/solve.sh": "#!/bin/sh\n" + solve,
            f"tasks/{task}/evaluator.py": evaluator,
        },
    )


def harbor_task(
    root: Path,
    solve: str,
    test: str,
    *,
    toml_extra: str = "",
    verifier_extra: str = "",
    task: str = "hostile",
) -> Path:
    """A Harbor dataset of one task (base image, workdir /srv) whose oracle runs `solve`;
    `verifier_extra` lines go into its `[verifier]` table, `toml_extra` at the end."""
    toml = (
        f"[agent]\ntimeout_sec = 60.0\n\n[verifier]\ntimeout_sec = 60.0\n{verifier_extra}\n"
        '[environment]\ndocker_image = "ageval/base:bookworm"\nworkdir = "/srv"\n' + toml_extra
    )
    return write(
        root,
        {
            f"{task}/task.toml": toml,
            f"{task}/instruction.md": "Do what you must.\n",
            f"{task}/solution/solve.sh": "#!/bin/bash\n" + solve,
            f"{task}/tests/test.sh": "#!/bin/bash\n" + test,
        },
    )


def run(*args: str) -> tuple[int, dict[str, Any], str]:
    """`ageval <args> --json` in this process: exit code, document, and what was printed."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([*args, "--json"])
    text = out.getvalue()
    return code, json.loads(text), text


PASS_IF_SOLVED = """\
from pathlib import Path

def evaluate(ctx):
    solved = (ctx.workspace / "solved.txt").is_file()
    return {"status": "PASS" if solved else "FAIL", "details": {"solved": solved}}
"""
