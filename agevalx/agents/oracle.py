"""`OracleExecutor`: runs the task's own solution (`solution/solve.sh`) instead of an agent.

The task format decides the layout (`OracleLayout`, from its `TaskRuntime.oracle` hook): an
ageval task's `solution/` is copied to `<attempt>/.ageval/solution/` and `solve.sh` runs there
with bash (sh when the image has no bash), cwd the agent's working directory and HOME the
agent's home; a Harbor task's is copied to `/solution` and run as Harbor's oracle agent runs
it, its output written to `/logs/agent/oracle.txt`. Either way the combined output and exit
code are recorded as one `terminal` action; a non-zero exit is a result, not an error.
"""

from __future__ import annotations

import dataclasses
import math
import posixpath
import shlex
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
    OracleLayout,
    RecordedAction,
    WallTimeExceeded,
)
from agevalx.aio import run_sync

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
        return run_sync(lambda: self._invoke(invocation))

    async def _invoke(self, invocation: Invocation) -> InvocationResult:
        layout = invocation.oracle or OracleLayout()
        # The solution's own variables are secrets like the agent's: masked when recorded.
        invocation = dataclasses.replace(
            invocation, environ={**invocation.environ, **layout.environment}
        )
        container = invocation.container
        sandbox = self._sandbox_factory(container)
        directory = await _copy_solution(sandbox, invocation, layout)
        shell = await sandbox.shell(container.image)
        script = posixpath.join(directory, SOLVE_SCRIPT)
        if layout.command is None:
            argv, display = [shell, script], f"{shell} {script}"
        else:
            argv, display = [shell, "-c", layout.command], layout.command
        terminal = await Terminal.start(
            sandbox,
            terminal_id="oracle",
            argv=argv,
            display=display,
            cwd=container.workdir,
            env={"HOME": layout.home or container.home},
            secrets=dict(invocation.environ),
            output_limit=OUTPUT_LIMIT,
        )
        recorder = Recorder(invocation)
        seconds = max(invocation.deadline - time.monotonic(), 0.0)
        try:
            status = await terminal.wait(math.floor(seconds) if layout.whole_seconds else seconds)
        except TimeoutError:
            await terminal.kill()
            output = await _output(sandbox, layout, terminal)
            _record(recorder, terminal, container, output, {"wall_time_exceeded": True})
            raise WallTimeExceeded(f"{SOLVE_SCRIPT} ran past the wall time") from None
        output = await _output(sandbox, layout, terminal)
        _record(
            recorder,
            terminal,
            container,
            output,
            {"signal": status.signal} if status.signal else {},
        )
        return InvocationResult(
            stop_reason="exit",
            output=recorder.redactor.text(output),
            exit_code=status.exit_code,
        )


async def _copy_solution(sandbox: Sandbox, invocation: Invocation, layout: OracleLayout) -> str:
    source = Path(invocation.task_dir or "") / "solution"
    if invocation.task_dir is None or not (source / SOLVE_SCRIPT).is_file():
        raise AgentError(
            "oracle_solution_missing", f"the task has no solution/{SOLVE_SCRIPT} ({source})"
        )
    directory = layout.target or staging_dir(invocation.container, "solution")
    if not layout.seeded:
        await sandbox.put_files(directory, read_tree(source))
    if layout.setup is not None:
        await sandbox.run(["sh", "-c", layout.setup])
    return directory


async def _output(sandbox: Sandbox, layout: OracleLayout, terminal: Terminal) -> str:
    if layout.output_file is None:
        return terminal.output
    found = await sandbox.run(
        ["sh", "-c", f"tail -c {OUTPUT_LIMIT} {shlex.quote(layout.output_file)} 2>/dev/null"]
    )
    return found.stdout.decode("utf-8", "replace")


def _record(
    recorder: Recorder,
    terminal: Terminal,
    container: Container,
    output: str,
    detail: dict[str, object],
) -> None:
    status = terminal.exit_status
    recorder.action(
        RecordedAction(
            type="terminal",
            command=terminal.command,
            cwd=container.workdir,
            exit_code=None if status is None else status.exit_code,
            output=tail(output),
            detail={"executor": "oracle", **detail},
        )
    )
