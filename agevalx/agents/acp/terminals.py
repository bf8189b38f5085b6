"""Processes run on the agent's behalf (`terminal/*`), with bounded output capture."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from agevalx.agents.acp.sandbox import LaunchRequest, Sandbox, parse_pid_line

DEFAULT_OUTPUT_LIMIT = 1024 * 1024
"""Bytes of output kept per terminal when the agent sets no `outputByteLimit`."""

KILL_GRACE = 5.0
"""Seconds to wait for a killed process's `docker exec` client to end before killing it too."""

_CHUNK = 64 * 1024
_PID_LINE_MAX = 64


class OutputBuffer:
    """The last `limit` bytes of a stream; the text starts at a UTF-8 character boundary."""

    def __init__(self, limit: int) -> None:
        self._limit = max(0, limit)
        self._data = bytearray()
        self.truncated = False

    def feed(self, chunk: bytes) -> None:
        """Append `chunk`, dropping the oldest bytes beyond the limit."""
        self._data += chunk
        excess = len(self._data) - self._limit
        if excess > 0:
            del self._data[:excess]
            self.truncated = True

    def text(self) -> str:
        """The kept bytes as text (a partial leading character is dropped)."""
        data = bytes(self._data)
        if self.truncated:
            start = 0
            while start < len(data) and data[start] & 0xC0 == 0x80:
                start += 1
            data = data[start:]
        return data.decode("utf-8", "replace")


@dataclass(frozen=True)
class ExitStatus:
    """How a process ended."""

    exit_code: int | None
    signal: str | None = None


def split_pid_line(data: bytes) -> tuple[int | None, bytes]:
    """Take the wrapper's pid announcement off the front of `data`, if it is there."""
    line, newline, rest = data.partition(b"\n")
    pid = parse_pid_line(line) if newline else None
    return (pid, rest) if pid is not None else (None, data)


class Terminal:
    """One process started for the agent; its output is captured as it runs."""

    def __init__(
        self,
        terminal_id: str,
        command: str,
        cwd: str,
        process: asyncio.subprocess.Process,
        sandbox: Sandbox,
        output_limit: int,
        release: Callable[[], None] = lambda: None,
    ) -> None:
        self.id = terminal_id
        self.command = command
        self.cwd = cwd
        self.pid: int | None = None
        self._process = process
        self._sandbox = sandbox
        self._buffer = OutputBuffer(output_limit)
        self._killed = False
        self._status: ExitStatus | None = None
        self._release = release
        self._pump = asyncio.create_task(self._read_output(), name=f"ageval.terminal.{terminal_id}")

    @classmethod
    async def start(
        cls,
        sandbox: Sandbox,
        *,
        terminal_id: str,
        argv: Sequence[str],
        display: str,
        cwd: str,
        env: Mapping[str, str],
        secrets: Mapping[str, str] | None = None,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
    ) -> Terminal:
        """Start `argv` in `cwd` inside the sandbox, stderr merged into stdout; waits while
        the sandbox's terminal pool is full."""
        request = LaunchRequest(
            argv=argv,
            workdir=cwd,
            env=env,
            secrets=secrets or {},
            report_pid=True,
            merge_stderr=True,
        )
        process, release = await sandbox.start_terminal(request)
        return cls(terminal_id, display, cwd, process, sandbox, output_limit, release)

    @property
    def exit_status(self) -> ExitStatus | None:
        """The exit status once the process has ended and its output is read."""
        return self._status

    @property
    def output(self) -> str:
        """The output captured so far (bounded)."""
        return self._buffer.text()

    @property
    def truncated(self) -> bool:
        """Whether older output was dropped to honour the byte limit."""
        return self._buffer.truncated

    async def wait(self, timeout: float | None = None) -> ExitStatus:
        """Wait until the process ends (`TimeoutError` after `timeout` seconds)."""
        await asyncio.wait_for(asyncio.shield(self._pump), timeout)
        assert self._status is not None
        return self._status

    async def kill(self) -> None:
        """Kill the process and everything in its process group; wait until it is gone."""
        if self._status is not None:
            return
        self._killed = True
        if self.pid is not None:
            await self._sandbox.kill_group(self.pid)
        try:
            await self.wait(KILL_GRACE)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()
            await self.wait()

    async def _read_output(self) -> None:
        try:
            await self._pump_output()
        finally:
            self._release()  # the process has ended: its pool slot is free

    async def _pump_output(self) -> None:
        stream = self._process.stdout
        assert stream is not None
        head = b""
        while b"\n" not in head and len(head) <= _PID_LINE_MAX:
            chunk = await stream.read(_CHUNK)
            if not chunk:
                break
            head += chunk
        self.pid, head = split_pid_line(head)
        self._buffer.feed(head)
        while chunk := await stream.read(_CHUNK):
            self._buffer.feed(chunk)
        self._status = self._status_of(await self._process.wait())

    def _status_of(self, returncode: int) -> ExitStatus:
        if self._killed:
            return ExitStatus(None, "SIGKILL")
        if returncode < 0:
            return ExitStatus(None, signal.Signals(-returncode).name)
        return ExitStatus(returncode)


class Terminals:
    """The terminals of one invocation, by id."""

    def __init__(self) -> None:
        self._terminals: dict[str, Terminal] = {}
        self._counter = 0

    def new_id(self) -> str:
        """A fresh terminal id."""
        self._counter += 1
        return f"term-{self._counter}"

    def add(self, terminal: Terminal) -> None:
        """Track a started terminal."""
        self._terminals[terminal.id] = terminal

    def get(self, terminal_id: str) -> Terminal | None:
        """The terminal with this id, if it exists and was not released."""
        return self._terminals.get(terminal_id)

    async def release(self, terminal_id: str) -> None:
        """Kill the terminal if it still runs and forget it."""
        terminal = self._terminals.pop(terminal_id, None)
        if terminal is not None:
            await terminal.kill()

    async def close(self) -> None:
        """Kill and forget every terminal (end of the invocation)."""
        for terminal_id in list(self._terminals):
            await self.release(terminal_id)
