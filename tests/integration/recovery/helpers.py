"""What the recovery tests share: the CLI as a function, the kept attempt, a fork."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agevalx.cli import main

RUNCASES = Path(__file__).resolve().parents[3] / "tests/integration/data/runcases"
TASK = "three-steps"


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    """Run `ageval <args> --json`: the exit code and the printed document."""
    code = main([*args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def keep_an_attempt(dataset: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """Run TASK once, keeping its cut points; its result."""
    code, document = cli(capsys, "run", str(dataset), "--task", TASK, "--keep-recovery-state")
    assert code == 0, document
    result: dict[str, Any] = document["results"][0]
    return result


def fork(
    capsys: pytest.CaptureFixture[str], dataset: Path, attempt: str, seq: int, model: str
) -> tuple[int, dict[str, Any]]:
    """`ageval run --fork <attempt> --checkpoint <seq> --model <model>`."""
    args = ("--fork", attempt, "--checkpoint", str(seq), "--model", model)
    return cli(capsys, "run", str(dataset), "--task", TASK, *args)
