"""The agent process and its stdio: newline-delimited JSON-RPC read with bounded appetite.

Policy for stdout lines that are not JSON-RPC messages ("noise": banners, debug prints, and
JSON that cannot be routed: an `id` that is not a string or an integer, a `method` that is
not a string, `params` that are not an object or an array): up to `MAX_NOISE_LINES` lines
and `MAX_NOISE_BYTES` bytes in all are tolerated and logged to the transcript (each cut to
`NOISE_EXCERPT` characters). Past either budget, or on a single line longer than
`MAX_LINE_BYTES`, the agent is judged to be flooding: the channel reports end of stream and
`failure` says why (`agent_protocol_error`). A line nested deeper than `MAX_JSON_DEPTH` is a
protocol error too. Memory stays bounded by the stream reader's limit whatever the agent
prints.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

from agevalx.agents.acp.sandbox import LaunchRequest, Sandbox, parse_pid_line
from agevalx.agents.acp.terminals import KILL_GRACE, OutputBuffer
from agevalx.agents.base import AgentError

MAX_LINE_BYTES = 16 * 1024 * 1024
"""Longest protocol line accepted (agents put whole files in one message)."""

MAX_JSON_DEPTH = 128
"""Deepest nesting of a message accepted (ACP messages nest a dozen levels; far deeper ones
would exhaust the recursion of everything that walks them)."""

MAX_NOISE_LINES = 100
MAX_NOISE_BYTES = 256 * 1024
NOISE_EXCERPT = 1024

STDERR_TAIL_BYTES = 8 * 1024
"""Bytes of the agent's stderr kept for error messages."""

STOP_GRACE = 2.0
"""Seconds an agent gets to exit after its stdin is closed, before it is killed."""


class AgentChannel:
    """An ACP message transport (`send`, `receive`, `close`) over the agent's stdin and stdout."""

    def __init__(
        self, process: asyncio.subprocess.Process, on_noise: Callable[[str], None]
    ) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._stdin = process.stdin
        self._stdout = process.stdout
        self._on_noise = on_noise
        self._send_lock = asyncio.Lock()
        self._first_line = True
        self._noise_lines = 0
        self._noise_bytes = 0
        self.pid: int | None = None
        """The agent's pid in the sandbox, once its wrapper announced it."""
        self.failure: AgentError | None = None
        """Why the channel stopped reading, when the agent broke the protocol."""

    async def send(self, message: dict[str, Any]) -> None:
        """Write one message as a line."""
        data = (json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
        async with self._send_lock:
            try:
                self._stdin.write(data)
                await self._stdin.drain()
            except (BrokenPipeError, ConnectionResetError, RuntimeError) as exc:
                raise ConnectionError("the agent's stdin is closed") from exc

    async def receive(self) -> dict[str, Any] | None:
        """The next JSON-RPC message, or None at end of stream (or on a protocol failure)."""
        while self.failure is None:
            line = await self._read_line()
            if line is None:
                return None
            message = self._decode(line)
            if message is not None:
                return message
        return None

    async def close(self) -> None:
        """Close the agent's stdin (a well-behaved agent exits on it)."""
        with contextlib.suppress(Exception):
            self._stdin.close()

    async def _read_line(self) -> bytes | None:
        try:
            line = await self._stdout.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            line = exc.partial
        except asyncio.LimitOverrunError:
            self.failure = AgentError(
                "agent_protocol_error",
                f"the agent wrote a stdout line longer than {MAX_LINE_BYTES} bytes",
            )
            return None
        if not line:
            return None
        if self._first_line:
            self._first_line = False
            self.pid = parse_pid_line(line)
            if self.pid is not None:
                return b""
        return line

    def _decode(self, line: bytes) -> dict[str, Any] | None:
        text = line.decode("utf-8", "replace").strip()
        if not text:
            return None
        try:
            message = json.loads(text)
        except ValueError:
            message = None
        except RecursionError:
            message = _TOO_DEEP
        if message is _TOO_DEEP or _nested_deeper(message, MAX_JSON_DEPTH):
            self.failure = AgentError(
                "agent_protocol_error",
                f"the agent wrote a JSON line nested deeper than {MAX_JSON_DEPTH} levels",
            )
            return None
        if _routable(message):
            assert isinstance(message, dict)
            return message
        self._noise(text, len(line))
        return None

    def _noise(self, text: str, size: int) -> None:
        self._noise_lines += 1
        self._noise_bytes += size
        if self._noise_lines > MAX_NOISE_LINES or self._noise_bytes > MAX_NOISE_BYTES:
            self.failure = AgentError(
                "agent_protocol_error",
                f"the agent flooded stdout with non-protocol output "
                f"({self._noise_lines} lines, {self._noise_bytes} bytes)",
            )
            return
        self._on_noise(text[:NOISE_EXCERPT])


_TOO_DEEP = object()
"""What `json.loads` gave up on (`RecursionError`)."""


def _nested_deeper(value: Any, limit: int) -> bool:
    """Whether containers nest deeper than `limit` in `value` (walked without recursion)."""
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False


def _routable(message: Any) -> bool:
    """A JSON-RPC request, notification or response the SDK can route: a string `method`
    with object or array `params`, and an `id` that is a string, an integer or null."""
    if not isinstance(message, dict) or not ("method" in message or "id" in message):
        return False
    if "method" in message:
        params = message.get("params")
        if not isinstance(message["method"], str) or not isinstance(params, dict | list | None):
            return False
    if "id" not in message:
        return True
    identifier = message["id"]
    return identifier is None or isinstance(identifier, str) or type(identifier) is int


class AgentProcess:
    """The running agent: its channel, its stderr tail, and how to stop it."""

    def __init__(
        self, sandbox: Sandbox, process: asyncio.subprocess.Process, channel: AgentChannel
    ) -> None:
        self.channel = channel
        self._sandbox = sandbox
        self._process = process
        self._stderr = OutputBuffer(STDERR_TAIL_BYTES)
        self._stderr_pump = asyncio.create_task(self._read_stderr(), name="ageval.agent.stderr")

    @classmethod
    async def start(
        cls, sandbox: Sandbox, request: LaunchRequest, on_noise: Callable[[str], None]
    ) -> AgentProcess:
        """Start the agent described by `request` (stdin piped, pid reported)."""
        process = await sandbox.start(request, limit=MAX_LINE_BYTES)
        return cls(sandbox, process, AgentChannel(process, on_noise))

    @property
    def stderr_tail(self) -> str:
        """The last few KiB the agent wrote to stderr."""
        return self._stderr.text()

    async def failure(self, during: str) -> AgentError:
        """Explain why the connection closed while waiting for `during`."""
        if self.channel.failure is not None:
            failure = self.channel.failure
            return AgentError(failure.code, f"{failure.message} during {during}", self.stderr_tail)
        try:
            returncode: int | None = await asyncio.wait_for(self._process.wait(), STOP_GRACE)
        except TimeoutError:
            returncode = None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._stderr_pump), 1.0)
        if returncode is None:
            message = f"the agent closed its stdout during {during}"
        else:
            message = f"the agent exited with code {returncode} during {during}"
        return AgentError("agent_crashed", message, self.stderr_tail)

    async def stop(self, *, kill: bool = False, terminate: bool = False) -> None:
        """End the agent: close stdin (and with `terminate`, send its process group SIGTERM,
        for agents that do not exit at the end of their input) and give it `STOP_GRACE`
        seconds, or kill it at once."""
        await self.channel.close()
        if terminate and not kill and self.channel.pid is not None:
            with contextlib.suppress(Exception):
                await self._sandbox.kill_group(self.channel.pid, "TERM")
        if not kill:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._process.wait(), STOP_GRACE)
        if self._process.returncode is None:
            await self._kill()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._stderr_pump), 1.0)
        self._stderr_pump.cancel()

    async def _kill(self) -> None:
        if self.channel.pid is not None:
            with contextlib.suppress(Exception):
                await self._sandbox.kill_group(self.channel.pid)
        try:
            await asyncio.wait_for(self._process.wait(), KILL_GRACE)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()
            await self._process.wait()

    async def _read_stderr(self) -> None:
        stream = self._process.stderr
        assert stream is not None
        while chunk := await stream.read(4096):
            self._stderr.feed(chunk)
