"""The scripted agent driven directly over stdio by a minimal fake client."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agevalx.agents import scripted

pytestmark = pytest.mark.unit

AGENT = Path(scripted.__file__).with_name("agent.py")
Message = dict[str, Any]


class FakeClient:
    """Speaks JSON-RPC lines to the agent; answers its requests with `answer(method, params)`."""

    def __init__(
        self,
        script: Path,
        answer: Callable[[str, Message], Any] | None = None,
        python: str = sys.executable,
        env: dict[str, str] | None = None,
    ) -> None:
        self.process = subprocess.Popen(
            [python, str(AGENT), "--script", str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.answer = answer or (lambda method, params: {})
        self.requests: list[tuple[str, Message]] = []
        self.updates: list[Message] = []
        self.noise: list[str] = []
        self._responses: queue.Queue[Message] = queue.Queue()
        self._next_id = 100
        threading.Thread(target=self._read, daemon=True).start()

    def call(self, method: str, params: Message, timeout: float = 10) -> Message:
        """Send a request and return the agent's response message."""
        self._next_id += 1
        self.send({"id": self._next_id, "method": method, "params": params})
        response = self._responses.get(timeout=timeout)
        assert response["id"] == self._next_id
        return response

    def send(self, message: Message) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        self.process.stdin.flush()

    def start_session(self, cwd: str = "/attempt/workspace") -> str:
        self.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session: str = self.call("session/new", {"cwd": cwd, "mcpServers": []})["result"][
            "sessionId"
        ]
        return session

    def prompt(self, session: str) -> Message:
        return self.call("session/prompt", {"sessionId": session, "prompt": []})

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(timeout=10)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            try:
                message = json.loads(raw)
            except ValueError:
                self.noise.append(raw.decode().rstrip("\n"))
                continue
            if "method" not in message:
                self._responses.put(message)
            elif "id" in message:
                self.requests.append((message["method"], message["params"]))
                result = self.answer(message["method"], message["params"])
                self.send({"id": message["id"], "result": result})
            else:
                self.updates.append(message["params"]["update"])


@pytest.fixture
def client_for(tmp_path: Path) -> Iterator[Callable[..., FakeClient]]:
    clients: list[FakeClient] = []

    def make(script: Any, **kwargs: Any) -> FakeClient:
        path = tmp_path / "script.json"
        path.write_text(json.dumps(script))
        clients.append(FakeClient(path, **kwargs))
        return clients[-1]

    yield make
    for client in clients:
        client.process.kill()
        client.process.wait()


def test_initialize_answers_protocol_version_1(client_for: Callable[..., FakeClient]) -> None:
    client = client_for({"steps": []})
    result = client.call("initialize", {"protocolVersion": 1})["result"]
    assert result["protocolVersion"] == 1
    assert result["agentCapabilities"]["loadSession"] is False
    assert client.close() == 0


def test_each_prompt_performs_the_next_turn(client_for: Callable[..., FakeClient]) -> None:
    client = client_for({"turns": [[{"message": "first"}], [{"message": "second"}]]})
    session = client.start_session()
    replies = [client.prompt(session)["result"] for _ in range(3)]
    assert replies == [{"stopReason": "end_turn"}] * 3
    texts = [
        u["content"]["text"] for u in client.updates if u["sessionUpdate"] == "agent_message_chunk"
    ]
    assert texts == ["first", "second"]


def test_file_and_terminal_steps_use_client_methods(client_for: Callable[..., FakeClient]) -> None:
    def answer(method: str, params: Message) -> Any:
        return {
            "terminal/create": {"terminalId": "t1"},
            "terminal/wait_for_exit": {"exitCode": 0},
            "terminal/output": {"output": "ok", "truncated": False},
            "fs/read_text_file": {"content": "data"},
        }.get(method, {})

    client = client_for(
        [
            {"write_file": {"path": "a.txt", "content": "x"}},
            {"read_file": "/tmp/b.txt"},
            {"terminal": "make test"},
        ],
        answer=answer,
    )
    client.prompt(client.start_session("/work"))
    methods = [method for method, _ in client.requests]
    assert methods == [
        "fs/write_text_file",
        "fs/read_text_file",
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/release",
    ]
    assert client.requests[0][1] == {
        "path": "/work/a.txt",
        "content": "x",
        "sessionId": "scripted-1",
    }
    assert client.requests[1][1]["path"] == "/tmp/b.txt"
    assert client.requests[2][1]["command"] == "make test"
    assert "args" not in client.requests[2][1]


def test_bash_tool_is_reported_like_pi_acp(
    client_for: Callable[..., FakeClient], tmp_path: Path
) -> None:
    client = client_for([{"bash_tool": "echo hi; exit 3"}])
    client.call(
        "initialize",
        {"protocolVersion": 1, "clientCapabilities": {"_meta": {"terminal_output": True}}},
    )
    session = client.call("session/new", {"cwd": str(tmp_path), "mcpServers": []})["result"]
    client.prompt(session["sessionId"])
    start, done = [u for u in client.updates if u["sessionUpdate"].startswith("tool_call")]
    assert (start["kind"], start["title"], start["rawInput"]) == (
        "execute",
        "echo hi; exit 3",
        {"command": "echo hi; exit 3"},
    )
    assert done["status"] == "failed"
    assert done["_meta"]["terminal_exit"]["exit_code"] == 1
    assert done["_meta"]["terminal_output"]["data"].endswith("Command exited with code 3")


def test_bash_tool_without_terminal_output_meta_uses_content(
    client_for: Callable[..., FakeClient], tmp_path: Path
) -> None:
    client = client_for([{"bash_tool": "echo hi"}])
    client.prompt(client.start_session(str(tmp_path)))
    done = next(u for u in client.updates if u["sessionUpdate"] == "tool_call_update")
    assert "_meta" not in done
    assert done["content"][0]["content"]["text"] == "```console\nhi\n```"


def test_cancel_stops_between_steps(client_for: Callable[..., FakeClient]) -> None:
    client = client_for([{"sleep": 0.3}, {"message": "never"}])
    session = client.start_session()
    client.send(
        {"id": 1, "method": "session/prompt", "params": {"sessionId": session, "prompt": []}}
    )
    client.send({"method": "session/cancel", "params": {"sessionId": session}})
    assert client._responses.get(timeout=10)["result"] == {"stopReason": "cancelled"}
    assert not [u for u in client.updates if u["sessionUpdate"] == "agent_message_chunk"]


def test_prompts_are_counted_in_the_counter_file(
    client_for: Callable[..., FakeClient], tmp_path: Path
) -> None:
    counter = tmp_path / "count.txt"
    client = client_for({"steps": []}, env={"AGEVAL_SCRIPTED_COUNTER": str(counter)})
    session = client.start_session()
    client.prompt(session)
    client.prompt(session)
    assert counter.read_text().splitlines() == ["prompt 1", "prompt 2"]


def test_unknown_methods_are_errors(client_for: Callable[..., FakeClient]) -> None:
    client = client_for({"steps": []})
    assert client.call("session/load", {})["error"]["code"] == -32601


def test_garbage_and_flood_print_non_json_lines(client_for: Callable[..., FakeClient]) -> None:
    client = client_for([{"garbage": "hello there"}, {"flood": 10000}])
    client.prompt(client.start_session())
    assert client.noise[0] == "hello there"
    assert sum(len(line) + 1 for line in client.noise[1:]) == 10000


def test_crash_exits_with_the_code_and_says_so(client_for: Callable[..., FakeClient]) -> None:
    client = client_for([{"crash": 9}])
    session = client.start_session()
    client.send(
        {"id": 1, "method": "session/prompt", "params": {"sessionId": session, "prompt": []}}
    )
    assert client.process.wait(timeout=10) == 9
    assert client.process.stderr is not None
    assert b"exiting with code 9" in client.process.stderr.read()


@pytest.mark.parametrize(
    "script",
    [
        {"steps": [{"dance": 1}]},
        {"steps": [{"message": "a", "sleep": 1}]},
        {"nope": []},
        {"steps": [{"write_file": "notes.txt"}]},
        {"steps": [{"sleep": "long"}]},
        {"steps": [{"read_file": {"line": 1}}]},
        {"turns": [[{"message": "ok"}], [{"crash": "now"}]]},
    ],
)
def test_invalid_scripts_are_refused_at_start(
    client_for: Callable[..., FakeClient], script: Any
) -> None:
    client = client_for(script)
    assert client.process.wait(timeout=10) == 2
    assert client.process.stderr is not None
    assert b"bad script" in client.process.stderr.read()


def test_a_step_that_fails_ends_the_turn_with_an_error_at_once(
    client_for: Callable[..., FakeClient],
) -> None:
    client = client_for(
        {
            "steps": [
                {"message": "before"},
                {"terminal": {"command": "ls", "env": [1]}},
                {"sleep": 60},
            ]
        }
    )
    session = client.start_session()
    error = client.prompt(session)["error"]
    assert error["code"] == -32603 and error["data"] == {"step": 2, "type": "terminal"}
    assert "script step 2 (terminal) failed: AttributeError" in error["message"]
    assert client.prompt(session)["result"] == {"stopReason": "end_turn"}  # the agent lives on
    assert client.close() == 0
    assert client.process.stderr is not None
    assert b"script step 2 (terminal) failed" in client.process.stderr.read()


def _python37() -> str | None:
    for candidate in sorted(Path.home().glob(".pyenv/versions/3.7*/bin/python3")):
        return str(candidate)
    return None


@pytest.mark.skipif(_python37() is None, reason="no Python 3.7 interpreter on this machine")
def test_the_agent_runs_on_python_3_7(client_for: Callable[..., FakeClient]) -> None:
    client = client_for([{"message": "old python"}], python=_python37())
    client.prompt(client.start_session())
    assert client.updates[0]["content"]["text"] == "old python"
