"""The oracle executor running a task's solve.sh in a real container."""

from __future__ import annotations

import time

import pytest

from agevalx.agents.base import WallTimeExceeded

from .conftest import ContainerRun

pytestmark = pytest.mark.integration


def test_the_oracle_runs_solve_sh_in_the_workspace(attempt: ContainerRun) -> None:
    result = attempt.oracle('echo "solved" > answer.txt\necho "ran in $(pwd) as $HOME"\n')
    assert (result.stop_reason, result.exit_code) == ("exit", 0)
    assert result.output == "ran in /attempt/workspace as /attempt/home\n"
    assert attempt.sh("cat /attempt/workspace/answer.txt").stdout == "solved\n"
    (action,) = attempt.actions
    assert (action.type, action.command) == (
        "terminal",
        "bash /attempt/.ageval/solution/solve.sh",
    )
    assert (action.exit_code, action.output) == (0, result.output)


def test_a_failing_solve_sh_is_recorded_with_its_exit_code(attempt: ContainerRun) -> None:
    result = attempt.oracle("echo partial\necho oops >&2\nexit 3\n")
    assert (result.exit_code, result.output) == (3, "partial\noops\n")
    assert attempt.actions[0].exit_code == 3


def test_a_solve_sh_past_the_deadline_is_killed(attempt: ContainerRun) -> None:
    started = time.monotonic()
    with pytest.raises(WallTimeExceeded):
        attempt.oracle("sleep 304\n", seconds=1.5)
    assert time.monotonic() - started < 10
    assert not [line for line in attempt.processes() if "sleep 304" in line]
    assert attempt.actions[0].detail["wall_time_exceeded"] is True
