"""Commands an agent runs with its own tools, seen through `tool_call` session updates.

pi (through pi-acp), codex-acp and claude-agent-acp run commands themselves and report
them as `execute` tool calls, with output in `_meta.terminal_output.data` (successive
pieces) and the exit code in `_meta.terminal_exit.exit_code`; opencode and openclaw put the
output in the content and the exit code in `rawOutput` (`metadata.exit`, `details.exitCode`).
Each such call becomes one
`agent_tool` action when it completes.

pi-acp 0.0.34 reports exit code 1 for every failed command; the real code is only in the
output text ("Command exited with code N"), so that text wins when present.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from acp.schema import ToolCallProgress, ToolCallStart
from agevalx.agents.acp.recording import RECORDED_TEXT_LIMIT, tail
from agevalx.agents.base import RecordedAction

_EXITED_WITH = re.compile(r"Command exited with code (\d+)")
_FENCE = re.compile(r"\A```[a-z]*\n(.*?)\n?```\s*\Z", re.DOTALL)
_DONE = ("completed", "failed")


@dataclass
class _ToolCall:
    kind: str | None = None
    title: str | None = None
    raw_input: Any = None
    cwd: str | None = None
    output: str = ""
    streamed: bool = False
    reported_exit: int | None = None
    status: str | None = None
    recorded: bool = False


def real_exit_code(reported: int | None, output: str) -> int | None:
    """The exit code to believe.

    For a command reported as failed (or with no code), the last "Command exited with code N"
    in its output; otherwise the reported code.
    """
    found = _EXITED_WITH.findall(output) if reported != 0 else []
    return int(found[-1]) if found else reported


def command_of(raw_input: Any, title: str | None) -> str | None:
    """The command line: `rawInput.command` (a string or an argv list), else the title."""
    command = raw_input.get("command") if isinstance(raw_input, dict) else None
    if isinstance(command, list) and all(isinstance(part, str) for part in command):
        return shlex.join(command)
    if isinstance(command, str) and command.strip():
        return command
    return title


class AgentToolTracker:
    """Follows tool calls across updates; returns an action when an `execute` call completes."""

    def __init__(self, session_cwd: str) -> None:
        self._session_cwd = session_cwd
        self._calls: dict[str, _ToolCall] = {}

    def observe(self, update: ToolCallStart | ToolCallProgress) -> RecordedAction | None:
        """Fold one update in; the finished action, the first time a call completes."""
        call = self._calls.setdefault(update.tool_call_id, _ToolCall())
        self._merge(call, update)
        meta = update.field_meta or {}
        finished = update.status in _DONE or isinstance(meta.get("terminal_exit"), dict)
        if call.recorded or not finished or not self._is_command(call, meta):
            return None
        call.recorded = True
        return self._action(update.tool_call_id, call, update)

    def _merge(self, call: _ToolCall, update: ToolCallStart | ToolCallProgress) -> None:
        call.kind = update.kind or call.kind
        call.title = update.title or call.title
        call.status = update.status or call.status
        if update.raw_input is not None:
            call.raw_input = update.raw_input
        meta = update.field_meta or {}
        info = meta.get("terminal_info")
        if isinstance(info, dict) and isinstance(info.get("cwd"), str):
            call.cwd = info["cwd"]
        streamed = meta.get("terminal_output")
        if isinstance(streamed, dict) and isinstance(streamed.get("data"), str):
            call.output = tail(call.output + streamed["data"])
            call.streamed = True
        exited = meta.get("terminal_exit")
        if isinstance(exited, dict) and isinstance(exited.get("exit_code"), int):
            call.reported_exit = exited["exit_code"]
        elif (code := _raw_exit(update.raw_output)) is not None:
            call.reported_exit = code

    def _is_command(self, call: _ToolCall, meta: dict[str, Any]) -> bool:
        return call.kind == "execute" or "terminal_output" in meta or "terminal_exit" in meta

    def _action(
        self, tool_call_id: str, call: _ToolCall, update: ToolCallStart | ToolCallProgress
    ) -> RecordedAction:
        output = call.output if call.streamed else _reported_text(update)
        exit_code = real_exit_code(call.reported_exit, output)
        detail: dict[str, Any] = {"tool_call_id": tool_call_id, "status": call.status}
        if exit_code != call.reported_exit:
            detail["reported_exit_code"] = call.reported_exit
        return RecordedAction(
            type="agent_tool",
            command=command_of(call.raw_input, call.title),
            cwd=call.cwd or _raw_cwd(call.raw_input) or self._session_cwd,
            exit_code=exit_code,
            output=tail(output, RECORDED_TEXT_LIMIT),
            detail=detail,
        )


_RAW_EXITS = (("metadata", "exit"), ("details", "exitCode"))
"""Where agents put the exit code in `rawOutput`: opencode, openclaw."""


def _raw_exit(raw_output: Any) -> int | None:
    """The exit code in `rawOutput` (`metadata.exit`, `details.exitCode`), if any."""
    for outer, inner in _RAW_EXITS:
        part = raw_output.get(outer) if isinstance(raw_output, dict) else None
        code = part.get(inner) if isinstance(part, dict) else None
        if isinstance(code, int) and not isinstance(code, bool):
            return code
    return None


def _raw_cwd(raw_input: Any) -> str | None:
    if isinstance(raw_input, dict):
        for key in ("cwd", "workdir"):
            if isinstance(raw_input.get(key), str):
                return str(raw_input[key])
    return None


def _reported_text(update: ToolCallStart | ToolCallProgress) -> str:
    """Output carried by content blocks or rawOutput, for agents without `_meta` output."""
    parts = []
    for item in update.content or []:
        text = getattr(getattr(item, "content", None), "text", None)
        if isinstance(text, str):
            parts.append(_unfenced(text))
    if parts:
        return "\n".join(parts)
    raw = update.raw_output
    if isinstance(raw, dict):
        raw = raw.get("output", raw.get("stdout"))
    return raw if isinstance(raw, str) else ""


def _unfenced(text: str) -> str:
    match = _FENCE.match(text)
    return match.group(1) if match else text
