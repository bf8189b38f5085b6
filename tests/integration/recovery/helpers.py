"""What the recovery tests share: the CLI as a function, the kept attempt and its copies, a fork."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from dataclasses import dataclass
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


@dataclass(frozen=True)
class KeptAttempt:
    """A dataset holding one sealed attempt of TASK that kept its cut points, and its cache."""

    dataset: Path
    cache: Path
    attempt_id: str
    run_key: str


def make_kept_attempt(root: Path) -> KeptAttempt:
    """Run TASK once into `root` (a dataset and a cache of its own), keeping its cut points;
    the caller has set `$AGEVAL_CACHE_DIR` to `root/cache`."""
    dataset = root / RUNCASES.name
    shutil.copytree(RUNCASES, dataset, ignore=shutil.ignore_patterns(".ageval"))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["run", str(dataset), "--task", TASK, "--keep-recovery-state", "--json"])
    document = json.loads(printed.getvalue())
    assert code == 0, document
    result = document["results"][0]
    run_key = next(node["key"] for node in result["nodes"] if node["kind"] == "run")
    return KeptAttempt(dataset, root / "cache", result["attempt_id"], run_key)


def copy_kept_attempt(kept: KeptAttempt, root: Path) -> KeptAttempt:
    """A copy of `kept`'s dataset and cache under `root`, for one test to change as it likes
    (the copy's cache is `$AGEVAL_CACHE_DIR` once the caller sets it): the attempt, its cut
    points and its committed image are made once per test process, not once per test."""
    dataset, cache = root / kept.dataset.name, root / "cache"
    shutil.copytree(kept.dataset, dataset, symlinks=True)
    shutil.copytree(kept.cache, cache, symlinks=True)
    return KeptAttempt(dataset, cache, kept.attempt_id, kept.run_key)


def fork(
    capsys: pytest.CaptureFixture[str], dataset: Path, attempt: str, seq: int, model: str
) -> tuple[int, dict[str, Any]]:
    """`ageval run --fork <attempt> --checkpoint <seq> --model <model>`."""
    args = ("--fork", attempt, "--checkpoint", str(seq), "--model", model)
    return cli(capsys, "run", str(dataset), "--task", TASK, *args)
