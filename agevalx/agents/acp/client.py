"""The ACP client side: serves the agent's requests in the sandbox and records each one.

Every request is recorded (through `Recorder`, secrets masked) before its answer goes back
to the agent, refusals included. Requests for methods this client does not implement get
JSON-RPC "method not found" from the SDK's router.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from acp import RequestError
from acp.interfaces import Agent
from acp.schema import (
    AgentMessageChunk,
    AgentPlanContentUpdate,
    AgentPlanRemovedUpdate,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AllowedOutcome,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    CreateElicitationResponse,
    CreateTerminalResponse,
    CurrentModeUpdate,
    DeniedOutcome,
    ElicitationMode,
    EnvVariable,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    SessionInfoUpdate,
    TerminalExitStatus,
    TerminalOutputResponse,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
    UserMessageChunk,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)
from agevalx.agents.acp.paths import PathRefused, allowed_roots, resolve_allowed
from agevalx.agents.acp.recording import Recorder, tail
from agevalx.agents.acp.sandbox import Sandbox
from agevalx.agents.acp.terminals import DEFAULT_OUTPUT_LIMIT, Terminal, Terminals
from agevalx.agents.acp.tools import AgentToolTracker
from agevalx.agents.base import Container, RecordedAction

PermissionPolicy = Literal["allow", "deny"]

MAX_READ_BYTES = 16 * 1024 * 1024
"""Largest file `fs/read_text_file` returns."""

MAX_OUTPUT_LIMIT = 16 * 1024 * 1024
"""Cap on an agent's `outputByteLimit`."""

_WRITE_SCRIPT = 'd="${1%/*}"; [ -z "$d" ] || mkdir -p -- "$d" && cat > "$1"'
_ALLOW = ("allow_once", "allow_always")
_REJECT = ("reject_once", "reject_always")

SessionUpdate = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
    | AgentPlanContentUpdate
    | AgentPlanRemovedUpdate
    | AvailableCommandsUpdate
    | CurrentModeUpdate
    | ConfigOptionUpdate
    | SessionInfoUpdate
    | UsageUpdate
)


def choose_option(
    options: Sequence[PermissionOption], policy: PermissionPolicy
) -> PermissionOption | None:
    """The option the policy picks: the first of its kind, else the first of the other kind."""
    preferred, fallback = (_ALLOW, _REJECT) if policy == "allow" else (_REJECT, _ALLOW)
    for kinds in (preferred, fallback):
        for option in options:
            if option.kind in kinds:
                return option
    return None


def refused(path: str, reason: str) -> RequestError:
    """The JSON-RPC error for a path outside the allowed roots."""
    return RequestError(-32602, f"path refused: {reason}", {"path": path})


@dataclass
class TurnResult:
    """What the client gathered from session updates during the prompt."""

    message_parts: list[str]
    usage: dict[str, Any]


class AcpClient:
    """The client object the ACP SDK dispatches the agent's requests to."""

    def __init__(
        self,
        *,
        sandbox: Sandbox,
        container: Container,
        recorder: Recorder,
        permission_policy: PermissionPolicy = "allow",
    ) -> None:
        self._sandbox = sandbox
        self._container = container
        self._recorder = recorder
        self._policy: PermissionPolicy = permission_policy
        self._roots = allowed_roots(container)
        self._tools = AgentToolTracker(container.workdir)
        self.terminals = Terminals()
        self.turn = TurnResult([], {})

    # --- session ---------------------------------------------------------------------------

    async def session_update(self, session_id: str, update: SessionUpdate, **kwargs: Any) -> None:
        """Log every update; gather message text and usage; record finished agent commands."""
        dumped = update.model_dump(mode="json", by_alias=True, exclude_none=True)
        self._recorder.transcript({"type": "session_update", "update": dumped})
        if isinstance(update, AgentMessageChunk) and isinstance(update.content, TextContentBlock):
            self.turn.message_parts.append(update.content.text)
        elif isinstance(update, UsageUpdate):
            self.turn.usage.update({k: v for k, v in dumped.items() if k != "sessionUpdate"})
        elif isinstance(update, ToolCallStart | ToolCallProgress):
            action = self._tools.observe(update)
            if action is not None:
                self._recorder.action(action)

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        """Answer by policy; record the request, the options and the choice."""
        choice = choose_option(options, self._policy)
        self._recorder.action(
            RecordedAction(
                type="permission",
                detail={
                    "title": tool_call.title,
                    "tool_call_id": tool_call.tool_call_id,
                    "options": [_dump(option) for option in options],
                    "policy": self._policy,
                    "choice": None if choice is None else choice.option_id,
                },
            )
        )
        if choice is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        outcome = AllowedOutcome(outcome="selected", option_id=choice.option_id)
        return RequestPermissionResponse(outcome=outcome)

    # --- files -----------------------------------------------------------------------------

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        """Read a text file in the sandbox (optionally from 1-based `line`, `limit` lines)."""
        window = {"line": line, "limit": limit}
        resolved = self._allowed("fs_read", path, window)
        result = await self._sandbox.run(["head", "-c", str(MAX_READ_BYTES + 1), "--", resolved])
        error = _read_error(result.returncode, result.stderr, len(result.stdout))
        if error is not None:
            self._record_fs("fs_read", resolved, None, {**window, "error": error})
            raise RequestError(-32002, f"cannot read {resolved}: {error}", {"uri": resolved})
        content = _window(result.stdout.decode("utf-8", "replace"), line, limit)
        self._record_fs("fs_read", resolved, content, window)
        return ReadTextFileResponse(content=content)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse | None:
        """Write a text file in the sandbox, creating its folder if needed."""
        resolved = self._allowed("fs_write", path, {})
        data = content.encode()
        script = ["sh", "-c", _WRITE_SCRIPT, "ageval-write", resolved]
        result = await self._sandbox.run(script, stdin_data=data)
        if result.returncode != 0:
            error = result.stderr.decode("utf-8", "replace").strip() or "write failed"
            self._record_fs("fs_write", resolved, content, {"error": error})
            raise RequestError(-32603, f"cannot write {resolved}: {error}", {"uri": resolved})
        self._record_fs("fs_write", resolved, content, {"bytes": len(data)})
        return WriteTextFileResponse()

    # --- terminals -------------------------------------------------------------------------

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        """Start a command: `args` given -> exec'd directly, else run with `sh -c`."""
        display = shlex.join([command, *args]) if args else command
        workdir = self._allowed("terminal", cwd or self._container.workdir, {}, command=display)
        limit = DEFAULT_OUTPUT_LIMIT if output_byte_limit is None else output_byte_limit
        variables = {"HOME": self._container.home, **{v.name: v.value for v in env or []}}
        terminal = await Terminal.start(
            self._sandbox,
            terminal_id=self.terminals.new_id(),
            argv=[command, *args] if args else ["sh", "-c", command],
            display=display,
            cwd=workdir,
            env=variables,
            output_limit=min(limit, MAX_OUTPUT_LIMIT),
        )
        self.terminals.add(terminal)
        detail = {"env": sorted(variables), "output_byte_limit": output_byte_limit}
        self._record_terminal("terminal/create", terminal, detail)
        return CreateTerminalResponse(terminal_id=terminal.id)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        """The output so far, and the exit status if the command has ended."""
        terminal = self._terminal(terminal_id)
        self._record_terminal("terminal/output", terminal, {"truncated": terminal.truncated})
        return TerminalOutputResponse(
            output=terminal.output,
            truncated=terminal.truncated,
            exit_status=_exit_status(terminal),
        )

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        """Wait until the command ends."""
        terminal = self._terminal(terminal_id)
        status = await terminal.wait()
        self._record_terminal("terminal/wait_for_exit", terminal, {"signal": status.signal})
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse | None:
        """Kill the command (the terminal stays readable until released)."""
        terminal = self._terminal(terminal_id)
        await terminal.kill()
        self._record_terminal("terminal/kill", terminal, {})
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse | None:
        """Kill the command if it still runs and forget the terminal."""
        terminal = self._terminal(terminal_id)
        await self.terminals.release(terminal_id)
        self._record_terminal("terminal/release", terminal, {})
        return ReleaseTerminalResponse()

    # --- methods this client does not offer -------------------------------------------------

    async def create_elicitation(
        self, message: str, mode: ElicitationMode, **kwargs: Any
    ) -> CreateElicitationResponse:
        """Not offered: there is no user to ask."""
        raise RequestError.method_not_found("elicitation/create")

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        """Ignored (never offered)."""

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """No extension methods are offered."""
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """Extension notifications are ignored."""

    def on_connect(self, conn: Agent) -> None:
        """Nothing to do when the connection is made."""

    # --- helpers ---------------------------------------------------------------------------

    def _allowed(
        self,
        kind: Literal["fs_read", "fs_write", "terminal"],
        path: str,
        detail: dict[str, Any],
        *,
        command: str | None = None,
    ) -> str:
        try:
            return resolve_allowed(path, self._container.workdir, self._roots)
        except PathRefused as exc:
            refusal = {**detail, "refused": exc.reason}
            if kind == "terminal":
                self._recorder.action(
                    RecordedAction(type="terminal", command=command, cwd=path, detail=refusal)
                )
            else:
                self._record_fs(kind, path, None, refusal)
            raise refused(path, exc.reason) from None

    def _record_fs(
        self,
        kind: Literal["fs_read", "fs_write"],
        path: str,
        content: str | None,
        detail: dict[str, Any],
    ) -> None:
        output = None if content is None else tail(content)
        self._recorder.action(RecordedAction(type=kind, path=path, output=output, detail=detail))

    def _record_terminal(self, method: str, terminal: Terminal, detail: dict[str, Any]) -> None:
        status = terminal.exit_status
        self._recorder.action(
            RecordedAction(
                type="terminal",
                command=terminal.command,
                cwd=terminal.cwd,
                exit_code=None if status is None else status.exit_code,
                output=tail(terminal.output) if method != "terminal/create" else None,
                detail={"method": method, "terminal_id": terminal.id, **detail},
            )
        )

    def _terminal(self, terminal_id: str) -> Terminal:
        terminal = self.terminals.get(terminal_id)
        if terminal is None:
            raise RequestError.invalid_params({"terminalId": terminal_id, "reason": "unknown"})
        return terminal


def _dump(option: PermissionOption) -> dict[str, Any]:
    return option.model_dump(mode="json", by_alias=True, exclude_none=True)


def _exit_status(terminal: Terminal) -> TerminalExitStatus | None:
    status = terminal.exit_status
    if status is None:
        return None
    return TerminalExitStatus(exit_code=status.exit_code, signal=status.signal)


def _read_error(returncode: int, stderr: bytes, size: int) -> str | None:
    if returncode != 0:
        return stderr.decode("utf-8", "replace").strip() or f"exit code {returncode}"
    if size > MAX_READ_BYTES:
        return f"larger than {MAX_READ_BYTES} bytes"
    return None


def _window(content: str, line: int | None, limit: int | None) -> str:
    """Lines `line` (1-based) to `line + limit - 1` of `content`."""
    if line is None and limit is None:
        return content
    lines = content.splitlines(keepends=True)
    start = max((line or 1) - 1, 0)
    end = None if limit is None else start + max(limit, 0)
    return "".join(lines[start:end])
