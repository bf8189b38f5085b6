"""A job too large to plan is refused at once with a coded usage error, never a silent hang.

`-k` is capped at `MAX_K` attempts per task, and one command plans at most
`MAX_PLANNED_ATTEMPTS` attempts (tasks x k); both limits are in the CLI help. On a terminal
the progress line says that planning is under way while it is.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from agevalx.cli import main
from agevalx.cli.progress import JobProgress
from agevalx.operations import planning
from agevalx.operations.planning import MAX_K, MAX_PLANNED_ATTEMPTS
from tests.unit.harbor.builders import write_task

pytestmark = pytest.mark.unit


def _error(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    started = time.monotonic()
    code = main([*argv, "--json"])
    captured = capsys.readouterr()
    assert time.monotonic() - started < 10
    assert code == 2, captured.out
    error: dict = json.loads(captured.out)["error"]
    return error


@pytest.mark.parametrize("k", [MAX_K + 1, 100_000, 10**12])
def test_a_huge_k_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], k: int
) -> None:
    task = write_task(tmp_path / "dataset", "t")
    error = _error(capsys, "run", str(task.parent), "--agent", "oracle", "-k", str(k))
    assert (error["code"], error["field"]) == ("k_too_large", "-k")
    assert "reuses the attempts already made" in error["hint"]


def test_graph_show_refuses_a_huge_k_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = write_task(tmp_path / "dataset", "t")
    error = _error(capsys, "graph", "show", str(task.parent), "--agent", "oracle", "-k", "100000")
    assert error["code"] == "k_too_large"


def test_too_many_tasks_times_k_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a", "b", "c"):
        write_task(tmp_path / "dataset", name)
    monkeypatch.setattr(planning, "MAX_PLANNED_ATTEMPTS", 5)
    error = _error(capsys, "run", str(tmp_path / "dataset"), "--agent", "oracle", "-k", "2")
    assert error["code"] == "too_many_attempts"
    assert "3 tasks x -k 2 are 6 attempts" in error["message"]
    assert "--task" in error["hint"]


def test_the_limits_are_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert f"at most {MAX_K}" in text and f"at most {MAX_PLANNED_ATTEMPTS} attempts" in text


def test_the_progress_line_says_planning_until_the_graph_is_planned() -> None:
    progress = JobProgress()
    assert progress._render().plain.startswith("planning the job's graph")
    progress.total = 2
    assert progress._render().plain.startswith("attempts: 0/2 done")
