"""The oracle executor, run on this machine (`LocalSandbox`)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agevalx.agents.acp import LocalSandbox
from agevalx.agents.base import (
    AgentError,
    Invocation,
    InvocationResult,
    OracleLayout,
    WallTimeExceeded,
)
from agevalx.agents.oracle import OracleExecutor

from .conftest import AgentRun

pytestmark = pytest.mark.unit


def _oracle(
    run: AgentRun,
    solve_sh: str | None,
    seconds: float = 30.0,
    layout: OracleLayout | None = None,
) -> InvocationResult:
    if solve_sh is not None:
        solution = run.task_dir / "solution"
        solution.mkdir(exist_ok=True)
        (solution / "solve.sh").write_text(solve_sh)
        (solution / "data.txt").write_text("42\n")
    invocation = Invocation(
        role="solver",
        prompt="",
        profile={"executor": "oracle"},
        container=run.container,
        deadline=time.monotonic() + seconds,
        record=run.actions.append,
        transcript=run.transcript.append,
        environ={"ORACLE_TOKEN": "tok-abcdef-123"},
        task_dir=str(run.task_dir),
        oracle=layout,
    )
    return OracleExecutor(sandbox_factory=LocalSandbox).invoke(invocation)


def test_solve_sh_runs_in_the_workspace_with_its_solution_files(agent_run: AgentRun) -> None:
    script = 'cp "$(dirname "$0")/data.txt" answer.txt; echo "home=$HOME"; echo $ORACLE_TOKEN\n'
    result = _oracle(agent_run, script)
    assert (agent_run.workspace / "answer.txt").read_text() == "42\n"
    assert (result.stop_reason, result.exit_code) == ("exit", 0)
    assert result.output == f"home={agent_run.container.home}\n***\n"
    (action,) = agent_run.actions
    assert action.type == "terminal"
    assert action.command is not None and action.command.endswith("/.ageval/solution/solve.sh")
    assert (action.exit_code, action.cwd) == (0, agent_run.container.workdir)


def test_a_failing_solution_is_recorded_not_raised(agent_run: AgentRun) -> None:
    result = _oracle(agent_run, "echo failing >&2\nexit 3\n")
    assert (result.exit_code, result.output) == (3, "failing\n")
    assert agent_run.actions[0].exit_code == 3


def test_a_solution_past_the_deadline_is_killed(agent_run: AgentRun) -> None:
    started = time.monotonic()
    with pytest.raises(WallTimeExceeded):
        _oracle(agent_run, "echo started\nsleep 30\n", seconds=1.0)
    assert time.monotonic() - started < 8
    (action,) = agent_run.actions
    assert action.detail["wall_time_exceeded"] is True
    assert action.output == "started\n"


def test_a_task_without_solution_is_an_error(agent_run: AgentRun) -> None:
    with pytest.raises(AgentError) as caught:
        _oracle(agent_run, None)
    assert caught.value.code == "oracle_solution_missing"
    assert not Path(agent_run.container.workdir, "answer.txt").exists()


@pytest.mark.parametrize("seeded", [True, False])
def test_a_seeded_solution_is_run_where_it_is_and_not_copied_again(
    agent_run: AgentRun, seeded: bool
) -> None:
    """`OracleLayout.seeded`: the run stage copied solution/ in as the container started; the
    oracle runs what is at the target (here a marked copy) instead of copying it again."""
    target = agent_run.task_dir.parent / "seeded-solution"
    target.mkdir()
    (target / "solve.sh").write_text("echo seeded\n")
    layout = OracleLayout(target=str(target), seeded=seeded)
    result = _oracle(agent_run, "echo copied\n", layout=layout)
    assert result.output == ("seeded\n" if seeded else "copied\n")
    assert (target / "data.txt").exists() is not seeded
