#!/usr/bin/env python3
"""A deterministic ACP agent that performs a script instead of asking a model.

Agent Client Protocol v1: JSON-RPC 2.0, one JSON message per line on stdin/stdout. Standard
library only; runs on any python3 >= 3.7 (keep it so: it is copied into task images).

    python3 agent.py --script script.json

The script is JSON: `{"turns": [[step, ...], ...]}` (one list of steps per `session/prompt`),
`{"steps": [step, ...]}` or a bare list of steps (one turn; later prompts do nothing). A step
is a one-key object, performed through the client's methods:

    terminal: "cmd" | {command, args, cwd, env, output_byte_limit, kill_after}
                            terminal/create, wait_for_exit (or kill after N s), output, release
    write_file: {path, content}          fs/write_text_file
    read_file: "path" | {path, line, limit}
                                         fs/read_text_file
    message: "text"                      session/update agent_message_chunk
    permission: {title, kind, options}   session/request_permission
    bash_tool: "cmd"                     run here; reported like pi-acp (tool_call + update
                                         with _meta.terminal_output/terminal_exit; a failing
                                         command is reported with exit code 1 and
                                         "Command exited with code N" in its output)
    request: {method, params}            any client request (for protocol tests)
    sleep: seconds                       (not interrupted by session/cancel)
    crash: exit_code                     exit at once, with a line on stderr
    garbage: "text"                      print a non-JSON line on stdout
    flood: bytes                         print that many bytes of non-JSON lines on stdout

Relative paths are relative to the session's cwd. After each step the agent reports what
came back as an `agent_thought_chunk` whose text is JSON `{"step", "type", "result"}`.
A script whose step has a value of the wrong shape is refused at start (exit code 2); a step
that fails while it runs ends the turn at once: the prompt is answered with a JSON-RPC error
naming the step (`data: {"step", "type"}`), and the agent goes on serving.
`session/cancel` stops the turn between steps; the prompt then answers `cancelled`.
If `AGEVAL_SCRIPTED_COUNTER` names a file, one line is appended to it per `session/prompt`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

PROTOCOL_VERSION = 1
STEP_TYPES = (
    "terminal",
    "write_file",
    "read_file",
    "message",
    "permission",
    "bash_tool",
    "request",
    "sleep",
    "crash",
    "garbage",
    "flood",
)
FLOOD_LINE = 4096
DEFAULT_PERMISSION_OPTIONS = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]


class ScriptError(Exception):
    """The script is not a valid list of steps."""


def load_turns(path: str) -> list[list[dict[str, Any]]]:
    """The script's turns, each a validated list of one-key step objects."""
    with open(path, encoding="utf-8") as handle:
        return turns_of(json.load(handle))


def turns_of(document: Any) -> list[list[dict[str, Any]]]:
    """The turns of a parsed script; `ScriptError` names the first malformed step."""
    if isinstance(document, list):
        turns = [document]
    elif isinstance(document, dict) and isinstance(document.get("turns"), list):
        turns = document["turns"]
    elif isinstance(document, dict) and isinstance(document.get("steps"), list):
        turns = [document["steps"]]
    else:
        raise ScriptError("a script is a list of steps, {'steps': [...]} or {'turns': [[...]]}")
    for number, turn in enumerate(turns, 1):
        if not isinstance(turn, list):
            raise ScriptError(f"turn {number} is not a list of steps")
        for index, step in enumerate(turn, 1):
            try:
                check_step(step)
            except ScriptError as exc:
                raise ScriptError(f"turn {number}, step {index}: {exc}") from None
    return turns


def _text_or_spec(value: Any, key: str) -> bool:
    return isinstance(value, str) or (isinstance(value, dict) and isinstance(value.get(key), str))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


STEP_SHAPES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "terminal": (lambda v: _text_or_spec(v, "command"), '"cmd" or {command: "cmd", ...}'),
    "write_file": (
        lambda v: (
            isinstance(v, dict)
            and isinstance(v.get("path"), str)
            and isinstance(v.get("content"), str)
        ),
        "{path, content} (both text)",
    ),
    "read_file": (lambda v: _text_or_spec(v, "path"), '"path" or {path, line, limit}'),
    "permission": (lambda v: isinstance(v, (str, dict)), '"title" or {title, kind, options}'),
    "request": (
        lambda v: isinstance(v, dict) and isinstance(v.get("method"), str),
        "{method, params}",
    ),
    "sleep": (_number, "seconds (a number >= 0)"),
    "crash": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an exit code"),
    "flood": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0, "bytes"),
}
"""What the value of each step type must look like (the other types take any value)."""


def check_step(step: Any) -> None:
    """Raise `ScriptError` unless `step` is a one-key object naming a known step type with
    a value of the right shape."""
    if not isinstance(step, dict) or len(step) != 1:
        raise ScriptError(f"a step is an object with exactly one key: {step!r}")
    kind, value = next(iter(step.items()))
    if kind not in STEP_TYPES:
        raise ScriptError(f"unknown step type {kind!r} (known: {', '.join(STEP_TYPES)})")
    shape = STEP_SHAPES.get(kind)
    if shape is not None and not shape[0](value):
        raise ScriptError(f"{kind} takes {shape[1]}, not {value!r:.80}")


class Wire:
    """JSON-RPC over stdio: thread-safe writes, and requests that wait for their response."""

    def __init__(self, out: IO[bytes]) -> None:
        self._out = out
        self._lock = threading.Lock()
        self._next_id = 0
        self._waiting: dict[int, list[Any]] = {}

    def write_line(self, text: str) -> None:
        """Write one raw line."""
        with self._lock:
            self._out.write(text.encode("utf-8") + b"\n")
            self._out.flush()

    def send(self, message: dict[str, Any]) -> None:
        """Write one JSON-RPC message."""
        message["jsonrpc"] = "2.0"
        self.write_line(json.dumps(message, separators=(",", ":")))

    def notify(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification."""
        self.send({"method": method, "params": params})

    def respond(self, request_id: Any, result: Any = None, error: Any = None) -> None:
        """Answer a request with a result or an error object."""
        if error is not None:
            self.send({"id": request_id, "error": error})
        else:
            self.send({"id": request_id, "result": result})

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request and wait for its answer: `{"result": ...}` or `{"error": ...}`."""
        event = threading.Event()
        with self._lock:
            self._next_id += 1
            request_id = self._next_id
            self._waiting[request_id] = [event, None]
        self.send({"id": request_id, "method": method, "params": params})
        event.wait()
        response = self._waiting.pop(request_id)[1]
        if not isinstance(response, dict):
            return {"error": {"message": "no response"}}
        if "error" in response:
            return {"error": response["error"]}
        return {"result": response.get("result")}

    def deliver(self, message: dict[str, Any]) -> None:
        """Hand a response read from stdin to the request waiting for it."""
        slot = self._waiting.get(message.get("id"))  # type: ignore[arg-type]
        if slot is not None:
            slot[1] = message
            slot[0].set()


class Session:
    """One ACP session: its cwd and the turn being performed."""

    def __init__(self, session_id: str, cwd: str) -> None:
        self.id = session_id
        self.cwd = cwd
        self.cancelled = threading.Event()
        self.busy = False


class ScriptedAgent:
    """Answers the client's requests; performs the script's turns in a worker thread."""

    def __init__(self, wire: Wire, turns: list[list[dict[str, Any]]]) -> None:
        self.wire = wire
        self.turns = turns
        self.turns_done = 0
        self.sessions: dict[str, Session] = {}
        self.terminal_output_meta = False
        self.counter = os.environ.get("AGEVAL_SCRIPTED_COUNTER")
        self.state_file: str | None = None
        self._calls = 0

    def next_call_id(self, prefix: str) -> str:
        """A tool call id unique in this agent's life."""
        self._calls += 1
        return f"{prefix}-{self._calls}"

    def handle(self, message: dict[str, Any]) -> None:
        """Dispatch one message read from stdin."""
        method = message.get("method")
        if method is None:
            self.wire.deliver(message)
            return
        params = message.get("params") or {}
        if "id" not in message:
            if method == "session/cancel":
                self._cancel(params)
            return
        handlers: dict[str, Callable[[Any, dict[str, Any]], None]] = {
            "initialize": self._initialize,
            "session/new": self._new_session,
            "session/prompt": self._prompt,
        }
        handler = handlers.get(method)
        if handler is None:
            error = {"code": -32601, "message": "Method not found", "data": {"method": method}}
            self.wire.respond(message["id"], error=error)
            return
        handler(message["id"], params)

    def _initialize(self, request_id: Any, params: dict[str, Any]) -> None:
        capabilities = params.get("clientCapabilities") or {}
        meta = capabilities.get("_meta") or {}
        self.terminal_output_meta = bool(meta.get("terminal_output"))
        result = {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": False,
                "promptCapabilities": {"image": False, "audio": False, "embeddedContext": False},
            },
            "agentInfo": {"name": "ageval-scripted-agent", "version": "1"},
            "authMethods": [],
        }
        self.wire.respond(request_id, result)

    def _new_session(self, request_id: Any, params: dict[str, Any]) -> None:
        session_id = f"scripted-{len(self.sessions) + 1}"
        self.sessions[session_id] = Session(session_id, params.get("cwd") or os.getcwd())
        self.wire.respond(request_id, {"sessionId": session_id})

    def _prompt(self, request_id: Any, params: dict[str, Any]) -> None:
        session = self.sessions.get(params.get("sessionId", ""))
        if session is None or session.busy:
            reason = "unknown session" if session is None else "a prompt is already running"
            self.wire.respond(request_id, error={"code": -32602, "message": reason})
            return
        self._count_prompt()
        steps = self.turns[self.turns_done] if self.turns_done < len(self.turns) else []
        self.turns_done += 1
        write_turns_done(self.state_file, self.turns_done)
        session.busy = True
        session.cancelled.clear()
        turn = Turn(self, session, steps)
        worker = threading.Thread(target=turn.run, args=(request_id,), daemon=True)
        worker.start()

    def _cancel(self, params: dict[str, Any]) -> None:
        session = self.sessions.get(params.get("sessionId", ""))
        if session is not None:
            session.cancelled.set()

    def _count_prompt(self) -> None:
        if self.counter:
            with open(self.counter, "a", encoding="utf-8") as handle:
                handle.write(f"prompt {self.turns_done + 1}\n")


class Turn:
    """The steps of one prompt, performed in order through the client."""

    def __init__(self, agent: ScriptedAgent, session: Session, steps: list[dict[str, Any]]):
        self.agent = agent
        self.wire = agent.wire
        self.session = session
        self.steps = steps

    def run(self, request_id: Any) -> None:
        """Perform every step (stopping early on cancel), then answer the prompt. A step that
        fails ends the turn at once: the prompt is answered with an error naming it."""
        stop_reason = "end_turn"
        for number, step in enumerate(self.steps, 1):
            if self.session.cancelled.is_set():
                stop_reason = "cancelled"
                break
            kind, value = next(iter(step.items()))
            try:
                result = getattr(self, "_" + kind)(value)
            except Exception as exc:
                self._fail(request_id, number, kind, exc)
                return
            self._report(number, kind, result)
        if self.session.cancelled.is_set():
            stop_reason = "cancelled"
        self.session.busy = False
        self.wire.respond(request_id, {"stopReason": stop_reason})

    def _fail(self, request_id: Any, number: int, kind: str, exc: Exception) -> None:
        message = f"script step {number} ({kind}) failed: {type(exc).__name__}: {exc}"
        sys.stderr.write(f"scripted agent: {message}\n")
        sys.stderr.flush()
        self.session.busy = False
        error = {"code": -32603, "message": message, "data": {"step": number, "type": kind}}
        self.wire.respond(request_id, error=error)

    def _report(self, number: int, kind: str, result: Any) -> None:
        text = json.dumps({"step": number, "type": kind, "result": result})
        self._update({"sessionUpdate": "agent_thought_chunk", "content": _text(text)})

    def _update(self, update: dict[str, Any]) -> None:
        self.wire.notify("session/update", {"sessionId": self.session.id, "update": update})

    def _call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.wire.request(method, dict(params, sessionId=self.session.id))

    def _path(self, path: str) -> str:
        return os.path.join(self.session.cwd, path)

    # --- steps -----------------------------------------------------------------------------

    def _terminal(self, value: Any) -> Any:
        spec: dict[str, Any] = {"command": value} if isinstance(value, str) else dict(value)
        params: dict[str, Any] = {"command": spec["command"]}
        if spec.get("args") is not None:
            params["args"] = spec["args"]
        if spec.get("cwd"):
            params["cwd"] = self._path(spec["cwd"])
        if spec.get("env"):
            params["env"] = [{"name": k, "value": v} for k, v in sorted(spec["env"].items())]
        if spec.get("output_byte_limit") is not None:
            params["outputByteLimit"] = spec["output_byte_limit"]
        created = self._call("terminal/create", params)
        if "error" in created:
            return created
        terminal = {"terminalId": created["result"]["terminalId"]}
        if spec.get("kill_after") is not None:
            time.sleep(float(spec["kill_after"]))
            self._call("terminal/kill", terminal)
        exited = self._call("terminal/wait_for_exit", terminal)
        output = self._call("terminal/output", terminal)
        self._call("terminal/release", terminal)
        return {"exit": exited.get("result"), "output": output.get("result")}

    def _write_file(self, value: Any) -> Any:
        params = {"path": self._path(value["path"]), "content": value["content"]}
        return self._call("fs/write_text_file", params)

    def _read_file(self, value: Any) -> Any:
        spec = {"path": value} if isinstance(value, str) else dict(value)
        params = {"path": self._path(spec["path"])}
        for key in ("line", "limit"):
            if spec.get(key) is not None:
                params[key] = spec[key]
        return self._call("fs/read_text_file", params)

    def _message(self, value: Any) -> Any:
        self._update({"sessionUpdate": "agent_message_chunk", "content": _text(str(value))})
        return None

    def _permission(self, value: Any) -> Any:
        spec = {"title": value} if isinstance(value, str) else dict(value)
        tool_call = {
            "toolCallId": self.agent.next_call_id("permission"),
            "title": spec.get("title", "permission"),
            "kind": spec.get("kind", "other"),
            "status": "pending",
        }
        options = spec.get("options") or DEFAULT_PERMISSION_OPTIONS
        return self._call("session/request_permission", {"toolCall": tool_call, "options": options})

    def _bash_tool(self, value: Any) -> Any:
        command = str(value)
        call_id = self.agent.next_call_id("bash")
        start: dict[str, Any] = {
            "sessionUpdate": "tool_call",
            "toolCallId": call_id,
            "title": command,
            "kind": "execute",
            "status": "in_progress",
            "rawInput": {"command": command},
        }
        if self.agent.terminal_output_meta:
            start["content"] = [{"type": "terminal", "terminalId": call_id}]
            start["_meta"] = {"terminal_info": {"terminal_id": call_id, "cwd": self.session.cwd}}
        self._update(start)
        code, output = _run_shell(command, self.session.cwd)
        self._update(self._bash_result(call_id, code, output))
        return {"exit_code": code}

    def _bash_result(self, call_id: str, code: int, output: str) -> dict[str, Any]:
        if code != 0:
            output = f"{output}\n\nCommand exited with code {code}"
        update: dict[str, Any] = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "status": "completed" if code == 0 else "failed",
        }
        if self.agent.terminal_output_meta:
            exit_meta = {"terminal_id": call_id, "exit_code": 0 if code == 0 else 1, "signal": None}
            meta: dict[str, Any] = {"terminal_exit": exit_meta}
            if output:
                meta["terminal_output"] = {"terminal_id": call_id, "data": output}
            update["_meta"] = meta
        else:
            fenced = "```console\n" + output.rstrip("\n") + "\n```"
            update["content"] = [{"type": "content", "content": _text(fenced)}]
        return update

    def _request(self, value: Any) -> Any:
        params = value.get("params")
        if isinstance(params, dict):
            params = dict(params)
            params.setdefault("sessionId", self.session.id)
        return self.wire.request(value["method"], params if params is not None else {})

    def _sleep(self, value: Any) -> Any:
        time.sleep(float(value))
        return None

    def _crash(self, value: Any) -> Any:
        sys.stderr.write(f"scripted agent: crash step, exiting with code {int(value)}\n")
        sys.stderr.flush()
        os._exit(int(value))

    def _garbage(self, value: Any) -> Any:
        self.wire.write_line(str(value))
        return None

    def _flood(self, value: Any) -> Any:
        remaining = int(value)
        while remaining > 0:
            size = min(remaining, FLOOD_LINE)
            self.wire.write_line("x" * (size - 1))
            remaining -= size
        return None


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _run_shell(command: str, cwd: str) -> tuple[int, str]:
    completed = subprocess.run(
        ["sh", "-c", command],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    return completed.returncode, completed.stdout.decode("utf-8", "replace")


def serve(agent: ScriptedAgent, stdin: IO[bytes]) -> None:
    """Read messages until stdin closes; lines that are not JSON objects are ignored."""
    for raw in iter(stdin.readline, b""):
        try:
            message = json.loads(raw.decode("utf-8", "replace"))
        except ValueError:
            continue
        if isinstance(message, dict):
            agent.handle(message)


def read_turns_done(path: str | None) -> int:
    """Turns performed by earlier processes of this role (0 without a state file)."""
    if not path:
        return 0
    try:
        with open(path, encoding="utf-8") as handle:
            return int(handle.read().strip() or 0)
    except (OSError, ValueError):
        return 0


def write_turns_done(path: str | None, count: int) -> None:
    if not path:
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(f"{count}\n")


def main(argv: list[str] | None = None) -> int:
    """Entry point: load the script, then serve ACP on stdio."""
    parser = argparse.ArgumentParser(description="deterministic scripted ACP agent")
    parser.add_argument("--script", required=True, help="JSON script of steps")
    parser.add_argument("--state", help="file holding the number of turns already performed")
    args = parser.parse_args(argv)
    try:
        turns = load_turns(args.script)
    except (OSError, ValueError, ScriptError) as exc:
        sys.stderr.write(f"scripted agent: bad script {args.script}: {exc}\n")
        return 2
    agent = ScriptedAgent(Wire(sys.stdout.buffer), turns)
    agent.state_file = args.state
    agent.turns_done = read_turns_done(args.state)
    serve(agent, sys.stdin.buffer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
