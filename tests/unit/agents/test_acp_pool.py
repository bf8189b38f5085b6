"""The sandbox's process pools: many requests at once never start more than the pool."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agevalx.agents.acp.sandbox import EXEC_POOL, LaunchRequest, LocalSandbox
from agevalx.agents.acp.terminals import Terminal
from agevalx.agents.base import Container

pytestmark = pytest.mark.unit


class CountingSandbox(LocalSandbox):
    """Counts the processes alive (not yet reaped) whenever one starts."""

    def __init__(self, container: Container) -> None:
        super().__init__(container)
        self.started: list[asyncio.subprocess.Process] = []
        self.most = 0

    async def start(
        self, request: LaunchRequest, *, limit: int = 2**16
    ) -> asyncio.subprocess.Process:
        process = await super().start(request, limit=limit)
        self.started.append(process)
        alive = sum(1 for started in self.started if started.returncode is None)
        self.most = max(self.most, alive)
        return process


async def _terminal(sandbox: CountingSandbox, index: int, command: str) -> Terminal:
    return await Terminal.start(
        sandbox,
        terminal_id=f"term-{index}",
        argv=["sh", "-c", command],
        display=command,
        cwd=str(sandbox.container.workdir),
        env={},
    )


def test_300_requests_at_once_run_at_most_two_pools_of_processes(tmp_path: Path) -> None:
    async def flood() -> tuple[int, list[int], list[str]]:
        sandbox = CountingSandbox(Container(id="local", workdir=str(tmp_path)))

        async def short_terminal(index: int) -> str:
            terminal = await _terminal(sandbox, index, "sleep 0.05; echo t")
            await terminal.wait()
            return terminal.output

        helpers = [sandbox.run(["sh", "-c", "sleep 0.05; exit 3"]) for _ in range(200)]
        terminals = [short_terminal(index) for index in range(100)]
        results = await asyncio.gather(*helpers)
        outputs = await asyncio.gather(*terminals)
        return sandbox.most, [r.returncode for r in results], outputs

    most, codes, outputs = asyncio.run(flood())
    assert codes == [3] * 200 and outputs == ["t\n"] * 100  # every request was served
    assert most <= 2 * EXEC_POOL


def test_long_terminals_do_not_hold_up_file_requests_and_queue_later_terminals(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        sandbox = CountingSandbox(Container(id="local", workdir=str(tmp_path)))
        long = [await _terminal(sandbox, index, "sleep 30") for index in range(EXEC_POOL)]
        result = await asyncio.wait_for(sandbox.run(["echo", "read"]), 5)
        assert result.stdout == b"read\n"  # a helper still runs with every terminal slot taken
        waiting = asyncio.ensure_future(_terminal(sandbox, 99, "echo late"))
        await asyncio.sleep(0.3)
        assert not waiting.done()  # the pool is full: the new terminal waits its turn
        await long[0].kill()
        late = await asyncio.wait_for(waiting, 5)
        assert (await late.wait()).exit_code == 0 and late.output == "late\n"
        for terminal in long[1:]:
            await terminal.kill()

    asyncio.run(scenario())
