"""An ACP agent (protocol v1, JSON-RPC over stdio) that runs mini-swe-agent's own loop.

mini-swe-agent has no ACP mode. This module is shipped as source into its bundle (it imports
nothing of agevalx) and run by the bundle's CPython:

- `initialize`, `session/new`, `session/prompt` and `session/cancel` are served here;
- a prompt runs mini-swe-agent's `DefaultAgent` with its text-based LiteLLM model (one
  ```` ```mswea_bash_command ```` block per reply, its `mini_textbased.yaml` templates) pointed
  at `MSWEA_ACP_BASE_URL`, the key in the provider's usual variable (read by LiteLLM);
- every command the agent issues runs through the client's `terminal/create`,
  `terminal/wait_for_exit`, `terminal/output` and `terminal/release`, and is reported as a
  `tool_call` (kind `execute`) and its `tool_call_update` (output and exit code). The task is
  done when a command prints `COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` first, mini-swe-agent's
  own convention (its `LocalEnvironment` decides it).

JSON-RPC goes over the process's original stdout; everything else printed to stdout (rich's
banners, LiteLLM's notices) is sent to stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import uuid
from collections.abc import Callable
from typing import IO, Any

PROTOCOL_VERSION = 1
MODEL_VARIABLE = "MSWEA_ACP_MODEL"
"""LiteLLM's model name (`openai/gpt-5.4-mini`)."""
BASE_URL_VARIABLE = "MSWEA_ACP_BASE_URL"
"""The endpoint LiteLLM sends requests to (`api_base`)."""
CONFIG = "mini_textbased.yaml"
"""mini-swe-agent's configuration whose templates the agent runs with."""
COMMAND_TIMEOUT = 30.0
"""Seconds a command may run unless the configuration says otherwise (mini-swe-agent's)."""
KILL_WAIT = 10.0

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class RpcError(Exception):
    """A JSON-RPC error, sent to or received from the client."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Cancelled(Exception):
    """The client cancelled the prompt turn."""


class _Pending:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: Any = None
        self.error: RpcError | None = None


class Connection:
    """Line-delimited JSON-RPC 2.0 on a pair of byte streams, usable from any thread."""

    def __init__(self, reader: IO[bytes], writer: IO[bytes]) -> None:
        self._reader = reader
        self._writer = writer
        self._lock = threading.Lock()
        self._pending: dict[int, _Pending] = {}
        self._ids = 0
        self.closed = threading.Event()

    def send(self, message: dict[str, Any]) -> None:
        line = json.dumps({"jsonrpc": "2.0", **message}, separators=(",", ":")) + "\n"
        with self._lock:
            self._writer.write(line.encode("utf-8"))
            self._writer.flush()

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: dict[str, Any], timeout: float | None = None) -> Any:
        """Call the client and wait for its answer; TimeoutError after `timeout` seconds."""
        pending = _Pending()
        with self._lock:
            self._ids += 1
            ident = self._ids
            self._pending[ident] = pending
        self.send({"id": ident, "method": method, "params": params})
        finished = pending.done.wait(timeout)
        with self._lock:
            self._pending.pop(ident, None)
        if not finished:
            if self.closed.is_set():
                raise RpcError(INTERNAL_ERROR, "the client closed the connection")
            raise TimeoutError(method)
        if pending.error is not None:
            raise pending.error
        return pending.result

    def serve(self, server: AcpServer) -> None:
        """Read messages until the input ends; answers go to pending requests."""
        try:
            for raw in self._reader:
                if raw.strip():
                    self._dispatch(server, raw)
        finally:
            self.closed.set()
            with self._lock:
                waiting = list(self._pending.values())
            for pending in waiting:
                pending.done.set()

    def _dispatch(self, server: AcpServer, raw: bytes) -> None:
        try:
            message = json.loads(raw)
        except ValueError:
            self.send({"id": None, "error": {"code": -32700, "message": "parse error"}})
            return
        if not isinstance(message, dict):
            return
        method = message.get("method")
        if method is None:
            self._answer(message)
        elif "id" in message:
            server.on_request(message["id"], str(method), message.get("params") or {})
        else:
            server.on_notification(str(method), message.get("params") or {})

    def _answer(self, message: dict[str, Any]) -> None:
        with self._lock:
            pending = self._pending.get(message.get("id"))  # type: ignore[arg-type]
        if pending is None:
            return
        error = message.get("error")
        if isinstance(error, dict):
            pending.error = RpcError(int(error.get("code", 0)), str(error.get("message", "")))
        else:
            pending.result = message.get("result")
        pending.done.set()


class Session:
    """One ACP session: where commands run, and whether its prompt was cancelled."""

    def __init__(self, session_id: str, cwd: str) -> None:
        self.id = session_id
        self.cwd = cwd
        self.cancelled = threading.Event()
        self.terminal: str | None = None
        """The terminal of the command running now, if any."""
        self.busy = threading.Lock()


class Terminals:
    """Runs a session's commands through the client's `terminal/*` and reports them."""

    def __init__(self, conn: Connection, session: Session) -> None:
        self.conn = conn
        self.session = session
        self._calls = 0

    def update(self, update: dict[str, Any]) -> None:
        self.conn.notify("session/update", {"sessionId": self.session.id, "update": update})

    def run(
        self, command: str, *, cwd: str = "", env: dict[str, str] | None = None, timeout: float
    ) -> dict[str, Any]:
        """Run `command` with `sh -c`: mini-swe-agent's output dict (output, returncode, ...)."""
        if self.session.cancelled.is_set():
            raise Cancelled
        self._calls += 1
        call = f"mswea-{self._calls}"
        base = {"sessionId": self.session.id}
        self.update(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": call,
                "title": command,
                "kind": "execute",
                "status": "pending",
                "rawInput": {"command": command},
            }
        )
        created = self.conn.request(
            "terminal/create",
            {
                **base,
                "command": command,
                "cwd": cwd or self.session.cwd,
                "env": [{"name": k, "value": v} for k, v in sorted((env or {}).items())],
            },
        )
        terminal = str(created["terminalId"])
        self.session.terminal = terminal
        ids = {**base, "terminalId": terminal}
        self.update(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call,
                "status": "in_progress",
                "content": [{"type": "terminal", "terminalId": terminal}],
            }
        )
        exception = ""
        try:
            try:
                status = self.conn.request("terminal/wait_for_exit", ids, timeout=timeout)
            except TimeoutError:
                self.conn.request("terminal/kill", ids)
                self.conn.request("terminal/wait_for_exit", ids, timeout=KILL_WAIT)
                status = {"exitCode": None}
                exception = f"the command timed out after {timeout:g} seconds"
            output = self.conn.request("terminal/output", ids)
        finally:
            self.session.terminal = None
            self.conn.request("terminal/release", ids)
        if self.session.cancelled.is_set():
            raise Cancelled
        code = status.get("exitCode")
        returncode = -1 if code is None else int(code)
        text = str(output.get("output") or "")
        self.update(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call,
                "status": "completed" if returncode == 0 else "failed",
                "rawOutput": {"output": text, "returncode": returncode},
            }
        )
        result: dict[str, Any] = {"output": text, "returncode": returncode, "exception_info": ""}
        if exception:
            result["exception_info"] = f"An error occurred while executing the command: {exception}"
        return result


Runner = Callable[[str, Terminals], str]
"""Runs a task (the prompt's text) with commands through `Terminals`; returns a stop reason."""


class AcpServer:
    """The agent side of ACP v1 for a task runner."""

    def __init__(self, conn: Connection, runner: Runner, name: str, version: str) -> None:
        self.conn = conn
        self.runner = runner
        self.info = {"name": name, "title": name, "version": version}
        self.sessions: dict[str, Session] = {}
        self.terminal_capable = False

    def on_request(self, ident: Any, method: str, params: dict[str, Any]) -> None:
        if method == "session/prompt":
            threading.Thread(target=self._prompt, args=(ident, params), daemon=True).start()
            return
        handler = {"initialize": self._initialize, "session/new": self._new_session}.get(method)
        try:
            if handler is None:
                raise RpcError(METHOD_NOT_FOUND, f"method not found: {method}")
            self.conn.send({"id": ident, "result": handler(params)})
        except RpcError as exc:
            self.conn.send({"id": ident, "error": {"code": exc.code, "message": exc.message}})

    def on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method != "session/cancel":
            return
        session = self.sessions.get(str(params.get("sessionId")))
        if session is None:
            return
        session.cancelled.set()
        terminal = session.terminal
        if terminal is not None:
            threading.Thread(target=self._kill, args=(session.id, terminal), daemon=True).start()

    def _kill(self, session_id: str, terminal: str) -> None:
        with contextlib.suppress(RpcError):  # the command may have ended meanwhile
            self.conn.request("terminal/kill", {"sessionId": session_id, "terminalId": terminal})

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        capabilities = params.get("clientCapabilities") or {}
        self.terminal_capable = bool(capabilities.get("terminal"))
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": False,
                "promptCapabilities": {"image": False, "audio": False, "embeddedContext": False},
            },
            "authMethods": [],
            "agentInfo": self.info,
        }

    def _new_session(self, params: dict[str, Any]) -> dict[str, Any]:
        if not self.terminal_capable:
            raise RpcError(
                INVALID_PARAMS,
                "this agent runs its commands in ACP terminals: the client "
                "must offer the `terminal` capability",
            )
        cwd = params.get("cwd")
        if not isinstance(cwd, str) or not cwd.startswith("/"):
            raise RpcError(INVALID_PARAMS, "session/new needs an absolute cwd")
        session = Session(uuid.uuid4().hex, cwd)
        self.sessions[session.id] = session
        return {"sessionId": session.id}

    def _prompt(self, ident: Any, params: dict[str, Any]) -> None:
        try:
            session = self.sessions.get(str(params.get("sessionId")))
            if session is None:
                raise RpcError(INVALID_PARAMS, "unknown session")
            if not session.busy.acquire(blocking=False):
                raise RpcError(INVALID_PARAMS, "a prompt turn is already running")
            try:
                session.cancelled.clear()
                task = prompt_text(params.get("prompt"))
                try:
                    stop = self.runner(task, Terminals(self.conn, session))
                except Cancelled:
                    stop = "cancelled"
                if session.cancelled.is_set():
                    stop = "cancelled"
            finally:
                session.busy.release()
            self.conn.send({"id": ident, "result": {"stopReason": stop}})
        except RpcError as exc:
            self.conn.send({"id": ident, "error": {"code": exc.code, "message": exc.message}})
        except Exception as exc:  # the agent's own failure: the client gets it as an error
            message = f"{type(exc).__name__}: {exc}"
            self.conn.send({"id": ident, "error": {"code": INTERNAL_ERROR, "message": message}})


def prompt_text(blocks: Any) -> str:
    """The text of a prompt's content blocks (text and embedded text resources)."""
    if not isinstance(blocks, list):
        raise RpcError(INVALID_PARAMS, "session/prompt needs a list of content blocks")
    parts: list[str] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "resource":
            resource = block.get("resource") or {}
            if "text" in resource:
                parts.append(str(resource["text"]))
    return "\n\n".join(parts)


# --- mini-swe-agent (only in the bundle) ---------------------------------------------------

STOP_REASONS = {"Submitted": "end_turn", "LimitsExceeded": "max_turn_requests"}


def run_mini_swe_agent(task: str, terminals: Terminals) -> str:
    """mini-swe-agent's DefaultAgent on `task`, commands through ACP terminals."""
    import platform

    import yaml
    from minisweagent.agents.default import DefaultAgent  # type: ignore[import-not-found]
    from minisweagent.config import builtin_config_dir  # type: ignore[import-not-found]
    from minisweagent.environments.local import LocalEnvironment  # type: ignore[import-not-found]
    from minisweagent.exceptions import InterruptAgentFlow  # type: ignore[import-not-found]
    from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel  # type: ignore[import-not-found]

    class AcpTerminalEnvironment(LocalEnvironment):  # type: ignore[misc]
        """LocalEnvironment's conventions, each command run in an ACP terminal."""

        def execute(
            self, action: dict[str, Any], cwd: str = "", *, timeout: int | None = None
        ) -> dict[str, Any]:
            try:
                output = terminals.run(
                    str(action.get("command", "")),
                    cwd=cwd or self.config.cwd,
                    env=dict(self.config.env),
                    timeout=float(timeout or self.config.timeout or COMMAND_TIMEOUT),
                )
            except Cancelled:
                exit_message = {"role": "exit", "content": "cancelled"}
                raise InterruptAgentFlow(
                    {**exit_message, "extra": {"exit_status": "Cancelled", "submission": ""}}
                ) from None
            self._check_finished(output)
            return output

        def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
            # LocalEnvironment adds os.environ, which holds the key: never into templates.
            return {**self.config.model_dump(), **platform.uname()._asdict(), **kwargs}

    class ReportingAgent(DefaultAgent):  # type: ignore[misc]
        """DefaultAgent that reports the model's replies as ACP agent messages."""

        def add_messages(self, *messages: dict[str, Any]) -> list[dict[str, Any]]:
            for message in messages:
                content = message.get("content")
                if message.get("role") == "assistant" and isinstance(content, str) and content:
                    terminals.update(
                        {
                            "sessionUpdate": "agent_message_chunk",
                            "content": {"type": "text", "text": content},
                        }
                    )
            return list(super().add_messages(*messages))

    config = yaml.safe_load((builtin_config_dir / CONFIG).read_text(encoding="utf-8"))
    model_config = dict(config.get("model") or {})
    model_config["model_name"] = os.environ[MODEL_VARIABLE]
    model_config["model_kwargs"] = {
        **(model_config.get("model_kwargs") or {}),
        "api_base": os.environ[BASE_URL_VARIABLE],
    }
    model_config["cost_tracking"] = "ignore_errors"
    model = LitellmTextbasedModel(**model_config)
    environment = AcpTerminalEnvironment(**{**(config.get("environment") or {}), "cwd": ""})
    agent = ReportingAgent(model, environment, **(config.get("agent") or {}))
    result = agent.run(task)
    status = str(result.get("exit_status", ""))
    if status == "Cancelled":
        return "cancelled"
    if status in STOP_REASONS:
        return STOP_REASONS[status]
    raise RuntimeError(f"mini-swe-agent stopped: {status}: {result.get('exception_str', '')}")


def main() -> None:
    """Serve ACP on stdio; stdout carries only the protocol."""
    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
    try:
        from importlib.metadata import version

        agent_version = version("mini-swe-agent")
    except Exception:
        agent_version = ""
    conn = Connection(sys.stdin.buffer, protocol)
    conn.serve(AcpServer(conn, run_mini_swe_agent, "mini-swe-agent", agent_version))


if __name__ == "__main__":
    main()
