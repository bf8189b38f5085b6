"""`OracleExecutor`: runs the task's own solution (`solution/solve.sh`) instead of an agent.

The task's `solution/` folder is copied into the container at `<attempt>/.ageval/solution/`
and `solve.sh` runs there with bash (sh when the image has no bash), cwd the workspace and
HOME the agent's home. Its combined output and exit code are recorded as one `terminal`
action; a non-zero exit is a result, not an error.
"""

from __future__ import annotations

import asyncio
import posixpath
import time
from pathlib import Path

from agevalx.agents.acp.recording import Recorder, tail
from agevalx.agents.acp.sandbox import (
    DockerSandbox,
    Sandbox,
    SandboxFactory,
    read_tree,
    staging_dir,
)
from agevalx.agents.acp.terminals import Terminal
from agevalx.agents.base import (
    AgentError,
    Container,
    Invocation,
    InvocationResult,
    RecordedAction,
    WallTimeExceeded,
)

OUTPUT_LIMIT = 1024 * 1024
"""Bytes of solve.sh output kept (the last ones)."""

SOLVE_SCRIPT = "solve.sh"


class OracleExecutor:
    """Runs invocations of `executor: oracle` roles.

    `invoke` runs its own event loop: call it from a thread that has none running.
    """

    def __init__(self, *, sandbox_factory: SandboxFactory = DockerSandbox) -> None:
        self._sandbox_factory = sandbox_factory

    def invoke(self, invocation: Invocation) -> InvocationResult:
        """Copy solution/ in, run solve.sh until it exits or the deadline passes."""
        if time.monotonic() >= invocation.deadline:
            raise WallTimeExceeded("the wall time was spent before the solution started")
        return asyncio.run(self._invoke(invocation))

    async def _invoke(self, invocation: Invocation) -> InvocationResult:
        container = invocation.container
        sandbox = self._sandbox_factory(container)
        directory = await _copy_solution(sandbox, invocation)
        shell = await sandbox.shell()
        script = posixpath.join(directory, SOLVE_SCRIPT)
        terminal = await Terminal.start(
            sandbox,
            terminal_id="oracle",
            argv=[shell, script],
            display=f"{shell} {script}",
            cwd=container.workdir,
            env={"HOME": container.home},
            secrets=invocation.environ,
            output_limit=OUTPUT_LIMIT,
        )
        recorder = Recorder(invocation)
        try:
            status = await terminal.wait(max(invocation.deadline - time.monotonic(), 0.0))
        except TimeoutError:
            await terminal.kill()
            _record(recorder, terminal, container, {"wall_time_exceeded": True})
            raise WallTimeExceeded(f"{SOLVE_SCRIPT} ran past the wall time") from None
        _record(recorder, terminal, container, {"signal": status.signal} if status.signal else {})
        return InvocationResult(
            stop_reason="exit",
            output=recorder.redactor.text(terminal.output),
            exit_code=status.exit_code,
        )


async def _copy_solution(sandbox: Sandbox, invocation: Invocation) -> str:
    source = Path(invocation.task_dir or "") / "solution"
    if invocation.task_dir is None or not (source / SOLVE_SCRIPT).is_file():
        raise AgentError(
            "oracle_solution_missing", f"the task has no solution/{SOLVE_SCRIPT} ({source})"
        )
    directory = staging_dir(invocation.container, "solution")
    await sandbox.put_files(directory, read_tree(source))
    return directory


def _record(
    recorder: Recorder, terminal: Terminal, container: Container, detail: dict[str, object]
) -> None:
    status = terminal.exit_status
    recorder.action(
        RecordedAction(
            type="terminal",
            command=terminal.command,
            cwd=container.workdir,
            exit_code=None if status is None else status.exit_code,
            output=tail(terminal.output),
            detail={"executor": "oracle", **detail},
        )
    )
