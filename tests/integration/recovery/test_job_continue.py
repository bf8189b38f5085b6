"""Kill -9 a job mid-way and run the same command again: the job continues where it stopped.

Sealed attempts are reused, the attempts in flight resume from their last checkpoint with
their ids (no completed invocation runs twice), and nothing the dead process left stays.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agevalx.cli import main
from agevalx.environments.engine import client
from tests.integration.conftest import this_workers
from tests.integration.recovery.test_resume_faults import (
    AGEVAL,
    RUNCASES,
    TASK,
    agent_starts,
    attempt_dirs,
    records,
)

pytestmark = [pytest.mark.integration]

K = 3
COMMAND = ("run", "--task", TASK, "-k", str(K), "--max-concurrent", str(K))


def invocations(directory: Path) -> list[int]:
    path = directory / "activity.jsonl"
    lines = path.read_text().splitlines() if path.is_file() else []
    return [
        json.loads(line)["invocation"]
        for line in lines
        if line.strip() and json.loads(line)["type"] == "invocation"
    ]


def kill_mid_job(dataset: Path, timeout: float = 120) -> int:
    """Start the job and SIGKILL it once every attempt has completed an invocation and none
    is sealed; its pid. (Asking also that none has completed all three failed under load:
    attempts that started seconds apart never met it, the first one finishing its three
    steps before the last one finished its first.)"""
    errors = dataset.parent / "job-stderr.txt"
    with errors.open("wb") as stderr:
        process = subprocess.Popen(
            [AGEVAL, COMMAND[0], str(dataset), *COMMAND[1:], "--json"],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    deadline = time.monotonic() + timeout
    try:
        while True:
            assert process.poll() is None, "the job finished before the fault point"
            if time.monotonic() >= deadline:  # where the job stands, for the post-mortem
                raise AssertionError(
                    f"the fault point was never reached; the job's threads:\n"
                    f"{_threads(process.pid)}\nits stderr: {errors.read_text()[-4000:]}"
                )
            directories = attempt_dirs(dataset)
            done = [invocations(directory) for directory in directories]
            sealed = any((directory / "result.json").exists() for directory in directories)
            assert not sealed, "an attempt was sealed before every attempt had begun"
            if len(done) == K and all(steps for steps in done):
                break
            time.sleep(0.05)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    return process.pid


def _threads(pid: int) -> str:
    """Every thread's Python stack in process `pid` (py-spy, from the venv), or why not."""
    spy = Path(sys.executable).with_name("py-spy")
    try:
        dump = subprocess.run(
            [str(spy), "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"(no dump: {exc})"
    return dump.stdout + dump.stderr


def _described(found: dict[str, Any]) -> str:
    labels = found.get("Labels") or {}
    maker = f"pid {labels.get('ageval.owner.pid')} session {labels.get('ageval.session')}"
    made = f"created {found['Created']}, {maker}"
    return f"{found['Names']} {labels.get('ageval')} {found['Status']} {made}"


def test_a_killed_job_continues_each_attempt_from_its_last_checkpoint(copy_dataset, capsys) -> None:
    dataset = copy_dataset(RUNCASES)
    started = time.time()
    killed = kill_mid_job(dataset)
    before = {directory.name: invocations(directory) for directory in attempt_dirs(dataset)}
    assert not any((dataset / ".ageval/runs" / name / "result.json").exists() for name in before)

    code = main([COMMAND[0], str(dataset), *COMMAND[1:], "--json"])
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert code == 0, document
    results = document["results"]
    assert sorted(result["attempt_id"] for result in results) == sorted(before)
    assert sorted(document["continued"]) == sorted(before)
    for result in results:
        assert result["status"] == "PASS", result
        steps = invocations(dataset / ".ageval/runs" / result["attempt_id"])
        assert steps == [0, 1, 2]
        assert steps[: len(before[result["attempt_id"]])] == before[result["attempt_id"]]
        # 3 invocations, plus at most the one cut short by the kill
        starts = agent_starts(started, result["attempt_id"], {killed, os.getpid()})
        assert starts <= 4, f"{starts} agent processes: a completed invocation ran again"
    assert document["reaped"]["containers"], "the dead process's containers were not reaped"
    for result in results:
        labels = this_workers(f"ageval.attempt={result['attempt_id']}")
        left = client().api.containers(all=True, filters={"label": labels})
        # what is left, said plainly: its role (attempt, harness, scoring), state and maker
        seen = f"at {time.time():.3f}; the killed job was pid {killed}, this is {os.getpid()}"
        assert [_described(found) for found in left] == [], seen

    # Once more: every attempt is sealed now, and reused.
    code = main([COMMAND[0], str(dataset), *COMMAND[1:], "--json"])
    again = json.loads(capsys.readouterr().out)
    assert code == 0 and again["continued"] == [] and again["counts"]["computed"] == 0
    assert len([r for r in records(dataset) if r["type"] == "invocation"]) == 3 * K
