"""The mini-swe-agent ACP adapter's protocol: handshake, terminals, cancel, errors.

A scripted client talks to the adapter over pipes, as ageval's client does over `docker exec`;
the task runner is a stand-in for mini-swe-agent's loop (not in this venv), calling the same
`Terminals` the real loop calls.
"""

from __future__ import annotations

import json
import os
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agevalx.agents import minisweagent_acp as adapter

pytestmark = pytest.mark.unit

CWD = "/attempt/workspace"


class Client:
    """The client end: sends requests, reads everything the adapter says."""

    def __init__(self, runner: adapter.Runner) -> None:
        to_agent_r, self._to_agent = os.pipe()
        from_agent_r, from_agent_w = os.pipe()
        self._out = os.fdopen(from_agent_r, "rb")
        conn = adapter.Connection(os.fdopen(to_agent_r, "rb"), os.fdopen(from_agent_w, "wb"))
        self.server = adapter.AcpServer(conn, runner, "mini-swe-agent", "2.4.6")
        self._thread = threading.Thread(target=conn.serve, args=(self.server,), daemon=True)
        self._thread.start()
        self._messages: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._ids = 100

    def _read(self) -> None:
        for line in self._out:
            self._messages.put(json.loads(line))

    def send(self, message: dict[str, Any]) -> None:
        os.write(self._to_agent, (json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())

    def request(self, method: str, params: dict[str, Any]) -> int:
        self._ids += 1
        self.send({"id": self._ids, "method": method, "params": params})
        return self._ids

    def next(self) -> dict[str, Any]:
        return self._messages.get(timeout=5)

    def answer(self, message: dict[str, Any], result: Any) -> None:
        self.send({"id": message["id"], "result": result})

    def close(self) -> None:
        os.close(self._to_agent)
        self._thread.join(timeout=5)

    def session(self) -> str:
        self.request("initialize", {"protocolVersion": 1, "clientCapabilities": {"terminal": True}})
        assert self.next()["result"]["protocolVersion"] == 1
        self.request("session/new", {"cwd": CWD, "mcpServers": []})
        return str(self.next()["result"]["sessionId"])


@pytest.fixture
def client_for() -> Iterator[Callable[[adapter.Runner], Client]]:
    clients: list[Client] = []

    def make(runner: adapter.Runner) -> Client:
        clients.append(Client(runner))
        return clients[-1]

    yield make
    for client in clients:
        client.close()


def _echo(outputs: list[dict[str, Any]]) -> adapter.Runner:
    def run(task: str, terminals: adapter.Terminals) -> str:
        outputs.append(terminals.run(f"echo {task}", env={"PAGER": "cat"}, timeout=30))
        return "end_turn"

    return run


def test_handshake_names_the_agent_and_protocol_v1(client_for: Any) -> None:
    client = client_for(_echo([]))
    ident = client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    reply = client.next()
    assert reply["id"] == ident
    assert reply["result"]["protocolVersion"] == 1
    assert reply["result"]["agentInfo"] == {
        "name": "mini-swe-agent",
        "title": "mini-swe-agent",
        "version": "2.4.6",
    }


def test_a_client_without_terminals_gets_an_error_at_session_new(client_for: Any) -> None:
    client = client_for(_echo([]))
    client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {"terminal": False}})
    client.next()
    client.request("session/new", {"cwd": CWD, "mcpServers": []})
    error = client.next()["error"]
    assert error["code"] == adapter.INVALID_PARAMS
    assert "terminal" in error["message"]


def test_unknown_methods_get_method_not_found(client_for: Any) -> None:
    client = client_for(_echo([]))
    client.request("session/load", {"sessionId": "x"})
    assert client.next()["error"]["code"] == adapter.METHOD_NOT_FOUND


def test_a_command_runs_through_the_clients_terminal_and_is_reported(client_for: Any) -> None:
    outputs: list[dict[str, Any]] = []
    client = client_for(_echo(outputs))
    session = client.session()
    prompt = client.request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}
    )
    announced = client.next()["params"]["update"]
    assert announced["sessionUpdate"] == "tool_call"
    assert (announced["kind"], announced["title"]) == ("execute", "echo hi")
    create = client.next()
    assert create["method"] == "terminal/create"
    assert create["params"] == {
        "sessionId": session,
        "command": "echo hi",
        "cwd": CWD,
        "env": [{"name": "PAGER", "value": "cat"}],
    }
    client.answer(create, {"terminalId": "t1"})
    running = client.next()["params"]["update"]
    assert running["content"] == [{"type": "terminal", "terminalId": "t1"}]
    wait = client.next()
    assert wait["method"] == "terminal/wait_for_exit"
    client.answer(wait, {"exitCode": 3, "signal": None})
    output = client.next()
    assert output["method"] == "terminal/output"
    client.answer(output, {"output": "hi\n", "truncated": False})
    release = client.next()
    assert (release["method"], release["params"]["terminalId"]) == ("terminal/release", "t1")
    client.answer(release, {})
    done = client.next()["params"]["update"]
    assert done["sessionUpdate"] == "tool_call_update"
    assert (done["status"], done["rawOutput"]) == ("failed", {"output": "hi\n", "returncode": 3})
    answer = client.next()
    assert answer == {"jsonrpc": "2.0", "id": prompt, "result": {"stopReason": "end_turn"}}
    assert outputs == [{"output": "hi\n", "returncode": 3, "exception_info": ""}]


def test_cancel_kills_the_running_command_and_ends_the_turn_cancelled(client_for: Any) -> None:
    client = client_for(_echo([]))
    session = client.session()
    prompt = client.request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "x"}]}
    )
    client.next()  # tool_call
    client.answer(client.next(), {"terminalId": "t1"})
    client.next()  # in progress
    wait = client.next()
    client.send({"method": "session/cancel", "params": {"sessionId": session}})
    kill = client.next()
    assert (kill["method"], kill["params"]["terminalId"]) == ("terminal/kill", "t1")
    client.answer(kill, {})
    client.answer(wait, {"exitCode": None, "signal": "SIGKILL"})
    client.answer(client.next(), {"output": "", "truncated": False})  # output
    client.answer(client.next(), {})  # release
    assert client.next() == {"jsonrpc": "2.0", "id": prompt, "result": {"stopReason": "cancelled"}}


def test_a_command_past_its_timeout_is_killed_and_reported_as_such(client_for: Any) -> None:
    outputs: list[dict[str, Any]] = []

    def run(task: str, terminals: adapter.Terminals) -> str:
        outputs.append(terminals.run("sleep 100", timeout=0.2))
        return "end_turn"

    client = client_for(run)
    session = client.session()
    client.request("session/prompt", {"sessionId": session, "prompt": [{"type": "text"}]})
    client.next()
    client.answer(client.next(), {"terminalId": "t1"})
    client.next()
    wait = client.next()
    kill = client.next()
    assert kill["method"] == "terminal/kill"
    client.answer(kill, {})
    client.answer(client.next(), {"exitCode": None, "signal": "SIGKILL"})  # the second wait
    client.answer(client.next(), {"output": "partial", "truncated": False})
    client.answer(client.next(), {})
    assert client.next()["params"]["update"]["status"] == "failed"
    assert client.next()["result"] == {"stopReason": "end_turn"}
    assert outputs[0]["returncode"] == -1
    assert "timed out after 0.2 seconds" in outputs[0]["exception_info"]
    assert wait["method"] == "terminal/wait_for_exit"


def test_the_agents_own_failure_is_a_json_rpc_error(client_for: Any) -> None:
    def run(task: str, terminals: adapter.Terminals) -> str:
        raise RuntimeError("mini-swe-agent stopped: RepeatedFormatError")

    client = client_for(run)
    session = client.session()
    prompt = client.request("session/prompt", {"sessionId": session, "prompt": []})
    error = client.next()
    assert error["id"] == prompt
    assert error["error"]["code"] == adapter.INTERNAL_ERROR
    assert "RepeatedFormatError" in error["error"]["message"]


def test_prompt_text_joins_text_and_embedded_text_resources() -> None:
    blocks = [
        {"type": "text", "text": "Solve it."},
        {"type": "image", "data": "..."},
        {"type": "resource", "resource": {"uri": "file:///a", "text": "context"}},
    ]
    assert adapter.prompt_text(blocks) == "Solve it.\n\ncontext"
    with pytest.raises(adapter.RpcError):
        adapter.prompt_text("not a list")
