"""The ACP client executor against real agent processes run on this machine (no Docker)."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agevalx.agents.acp import LocalSandbox
from agevalx.agents.acp import executor as executor_module
from agevalx.agents.acp.bundled import AgentLaunch
from agevalx.agents.acp.channel import MAX_NOISE_LINES
from agevalx.agents.acp.executor import AcpExecutor
from agevalx.agents.base import AgentError, Invocation, WallTimeExceeded

from .conftest import AgentRun

pytestmark = pytest.mark.unit

SECRET = "sk-test-0123456789"


def _python_agent(code: str) -> str:
    """An entry running a tiny inline Python program as the agent."""
    return shlex.join([sys.executable, "-c", code])


def _unique_sleep() -> str:
    """A `sleep` command line no other process on this machine has."""
    return f"sleep 60.{time.monotonic_ns() % 10**9:09d}"


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in args:
            found.append(args)
    return found


def test_prompt_turn_returns_messages_and_end_turn(agent_run: AgentRun) -> None:
    result = agent_run({"steps": [{"message": "hello "}, {"message": "world"}]})
    assert result.stop_reason == "end_turn"
    assert result.output == "hello world"
    assert agent_run.actions == []


def test_file_writes_and_reads_are_served_and_recorded(agent_run: AgentRun) -> None:
    agent_run(
        [
            {"write_file": {"path": "notes/a.txt", "content": "one\ntwo\nthree\n"}},
            {"read_file": {"path": "notes/a.txt", "line": 2, "limit": 1}},
        ]
    )
    assert (agent_run.workspace / "notes/a.txt").read_text() == "one\ntwo\nthree\n"
    write, read = agent_run.actions
    assert (write.type, write.path, write.output) == (
        "fs_write",
        str(agent_run.workspace / "notes/a.txt"),
        "one\ntwo\nthree\n",
    )
    assert (read.type, read.output, read.detail["line"]) == ("fs_read", "two\n", 2)
    assert agent_run.step_results()[1]["result"] == {"result": {"content": "two\n"}}


def test_reading_a_missing_file_is_an_error_for_the_agent(agent_run: AgentRun) -> None:
    agent_run([{"read_file": "absent.txt"}])
    (action,) = agent_run.actions
    assert "error" in action.detail
    assert agent_run.step_results()[0]["result"]["error"]["code"] == -32002


@pytest.mark.parametrize(
    "step",
    [
        {"read_file": "/etc/passwd"},
        {"read_file": "../../../../../../../../etc/passwd"},
        {"write_file": {"path": "/etc/ageval-escape", "content": "x"}},
        {"terminal": {"command": "pwd", "cwd": "/etc"}},
    ],
)
def test_paths_outside_the_roots_are_refused_and_recorded(
    agent_run: AgentRun, step: dict[str, object]
) -> None:
    agent_run([step])
    (action,) = agent_run.actions
    assert "outside the allowed roots" in action.detail["refused"]
    error = agent_run.step_results()[0]["result"]["error"]
    assert error["code"] == -32602
    assert not Path("/etc/ageval-escape").exists()


def test_terminal_lifecycle_is_recorded_per_request(agent_run: AgentRun) -> None:
    agent_run([{"terminal": "echo out; echo err >&2; exit 4"}])
    methods = [action.detail["method"] for action in agent_run.actions]
    assert methods == [
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/release",
    ]
    waited = agent_run.actions[1]
    assert (waited.exit_code, waited.output, waited.cwd) == (
        4,
        "out\nerr\n",
        agent_run.container.workdir,
    )
    report = agent_run.step_results()[0]["result"]
    assert report["exit"] == {"exitCode": 4}


def test_terminal_args_env_cwd_and_output_limit(agent_run: AgentRun) -> None:
    (agent_run.workspace / "sub").mkdir()
    agent_run(
        [
            {"terminal": {"command": "printf", "args": ["%s|%s", "a b", "$HOME"]}},
            {
                "terminal": {
                    "command": 'echo "$GREETING $(pwd)"',
                    "env": {"GREETING": "hi"},
                    "cwd": "sub",
                }
            },
            {"terminal": {"command": "printf 'ééééé'", "output_byte_limit": 5}},
        ]
    )
    outputs = [r["result"]["output"] for r in agent_run.step_results()]
    assert outputs[0]["output"] == "a b|$HOME"
    assert outputs[1]["output"] == f"hi {agent_run.workspace / 'sub'}\n"
    assert outputs[2] == {"output": "éé", "truncated": True, "exitStatus": {"exitCode": 0}}


def test_terminal_kill_ends_the_command(agent_run: AgentRun) -> None:
    started = time.monotonic()
    agent_run([{"terminal": {"command": "sleep 30", "kill_after": 0.2}}])
    assert time.monotonic() - started < 10
    report = agent_run.step_results()[0]["result"]
    assert report["exit"] == {"signal": "SIGKILL"}
    assert "terminal/kill" in [action.detail["method"] for action in agent_run.actions]


@pytest.mark.parametrize(("policy", "choice"), [("allow", "yes"), ("deny", "no")])
def test_permission_requests_are_answered_by_policy(
    agent_run: AgentRun, policy: str, choice: str
) -> None:
    options = [
        {"optionId": "no", "name": "No", "kind": "reject_once"},
        {"optionId": "yes", "name": "Yes", "kind": "allow_always"},
    ]
    agent_run(
        [{"permission": {"title": "run rm", "options": options}}],
        options={"permissions": policy},
    )
    (action,) = agent_run.actions
    assert action.type == "permission"
    assert (action.detail["title"], action.detail["choice"]) == ("run rm", choice)
    outcome = agent_run.step_results()[0]["result"]["result"]["outcome"]
    assert outcome == {"outcome": "selected", "optionId": choice}


def test_unknown_client_methods_get_method_not_found(agent_run: AgentRun) -> None:
    agent_run([{"request": {"method": "fs/delete_everything", "params": {}}}])
    error = agent_run.step_results()[0]["result"]["error"]
    assert error["code"] == -32601


def test_agent_run_commands_are_recorded_with_the_real_exit_code(agent_run: AgentRun) -> None:
    agent_run([{"bash_tool": "echo fine"}, {"bash_tool": "echo broken; exit 5"}])
    ok, failed = agent_run.of_type("agent_tool")
    assert (ok.command, ok.exit_code, ok.output) == ("echo fine", 0, "fine\n")
    assert failed.command == "echo broken; exit 5"
    assert failed.exit_code == 5
    assert failed.detail["reported_exit_code"] == 1
    assert failed.cwd == agent_run.container.workdir


def test_secrets_reach_the_agent_but_are_masked_in_records(agent_run: AgentRun) -> None:
    result = agent_run(
        [
            {"bash_tool": 'printf %s "$API_TOKEN" > token.txt; echo "$API_TOKEN"'},
            {"message": SECRET},
        ],
        environ={"API_TOKEN": SECRET},
    )
    assert (agent_run.workspace / "token.txt").read_text() == SECRET
    (action,) = agent_run.of_type("agent_tool")
    assert action.output == "***\n"
    assert result.output == "***"
    assert SECRET not in repr(agent_run.transcript) + repr(agent_run.actions)


def test_a_few_noise_lines_are_tolerated_and_logged(agent_run: AgentRun) -> None:
    result = agent_run([{"garbage": "debug: starting"}, {"flood": 3000}, {"message": "done"}])
    assert result.output == "done"
    noise = [entry["text"] for entry in agent_run.transcript if entry["type"] == "agent_stdout"]
    assert noise[0] == "debug: starting"
    assert len(noise) == 2


def test_a_stdout_flood_is_a_protocol_error(agent_run: AgentRun) -> None:
    with pytest.raises(AgentError) as caught:
        agent_run([{"flood": 4096 * (MAX_NOISE_LINES + 10)}, {"sleep": 30}])
    assert caught.value.code == "agent_protocol_error"
    assert "flooded" in caught.value.message


def test_a_giant_line_is_a_protocol_error_without_unbounded_memory(agent_run: AgentRun) -> None:
    code = (
        "import sys, time\n"
        "sys.stdout.write('x' * (40 * 1024 * 1024))\n"
        "sys.stdout.flush()\n"
        "time.sleep(30)\n"
    )
    started = time.monotonic()
    with pytest.raises(AgentError) as caught:
        agent_run(entry=_python_agent(code))
    assert caught.value.code == "agent_protocol_error"
    assert time.monotonic() - started < 20


def test_a_crashing_agent_raises_with_its_stderr(agent_run: AgentRun) -> None:
    with pytest.raises(AgentError) as caught:
        agent_run([{"message": "about to crash"}, {"crash": 7}])
    error = caught.value
    assert error.code == "agent_crashed"
    assert "exited with code 7" in error.message
    assert "crash step, exiting with code 7" in error.stderr_tail


def test_an_agent_that_cannot_start_raises_crashed(agent_run: AgentRun) -> None:
    with pytest.raises(AgentError) as caught:
        agent_run(entry="no-such-agent-binary --acp")
    assert caught.value.code == "agent_crashed"
    assert "not found" in caught.value.stderr_tail


def test_an_agent_that_never_answers_initialize_times_out(agent_run: AgentRun) -> None:
    executor = AcpExecutor(sandbox_factory=LocalSandbox, handshake_timeout=0.5)
    started = time.monotonic()
    silent = _unique_sleep()
    with pytest.raises(AgentError) as caught:
        agent_run(entry=silent, executor=executor)
    assert caught.value.code == "agent_timeout"
    assert "initialize" in caught.value.message
    assert time.monotonic() - started < 10
    assert not _processes_mentioning(silent)


@pytest.mark.parametrize("own", [None, 10.0])
def test_an_agent_that_starts_slowly_may_take_its_own_handshake_time(
    agent_run: AgentRun, monkeypatch: pytest.MonkeyPatch, own: float | None
) -> None:
    """An agent that starts a server before it answers `initialize` (openclaw's Gateway)
    declares a longer handshake; the executor's shorter one applies to every other."""
    launched = executor_module.agent_launch

    async def slow_start(*args: Any) -> AgentLaunch:
        launch = await launched(*args)
        launch.argv = ["sh", "-c", 'sleep 1.5; exec "$@"', "sh", *launch.argv]
        launch.handshake_seconds = own
        return launch

    monkeypatch.setattr(executor_module, "agent_launch", slow_start)
    executor = AcpExecutor(sandbox_factory=LocalSandbox, handshake_timeout=0.5)
    if own is None:
        with pytest.raises(AgentError) as caught:
            agent_run({"steps": [{"message": "late"}]}, executor=executor)
        assert caught.value.code == "agent_timeout"
        assert "within 0.5 s" in caught.value.message
    else:
        result = agent_run({"steps": [{"message": "late"}]}, executor=executor)
        assert result.output == "late"


def test_openclaw_waits_for_its_gateway_longer_than_the_launcher_does() -> None:
    """The launcher's own limit on the Gateway's start (1,800 waits of 0.1 s) ends first, so
    its error, with the Gateway's log, is the one reported."""
    from agevalx.agents.catalog import openclaw

    assert "-ge 1800" in openclaw.LAUNCHER and "sleep 0.1" in openclaw.LAUNCHER
    assert openclaw.AGENT.handshake_seconds is not None
    assert openclaw.AGENT.handshake_seconds > 1800 * 0.1


def test_wall_time_kills_an_agent_that_ignores_cancel(agent_run: AgentRun) -> None:
    started = time.monotonic()
    with pytest.raises(WallTimeExceeded):
        agent_run([{"sleep": 30}], seconds=1.0)
    assert time.monotonic() - started < 8
    assert not _processes_mentioning(str(agent_run.task_dir.parent / "attempt/.ageval"))


def test_wall_time_cancels_a_cooperative_agent_quickly(agent_run: AgentRun) -> None:
    started = time.monotonic()
    with pytest.raises(WallTimeExceeded):
        agent_run([{"sleep": 0.2}] * 50, seconds=1.0)
    assert time.monotonic() - started < 2.9  # cancelled within the grace, not killed after it


def test_wall_time_during_a_terminal_wait_kills_the_command(agent_run: AgentRun) -> None:
    marker = _unique_sleep()
    with pytest.raises(WallTimeExceeded):
        agent_run([{"terminal": marker}], seconds=1.0)
    assert not _processes_mentioning(marker)


def test_an_entry_is_required(agent_run: AgentRun) -> None:
    with pytest.raises(AgentError) as caught:
        agent_run(entry="")
    assert caught.value.code == "agent_entry_missing"


def test_the_scripted_agent_needs_a_readable_script(agent_run: AgentRun) -> None:
    with pytest.raises(AgentError) as caught:
        agent_run(options={"script": "missing.yaml"})
    assert caught.value.code == "agent_script_invalid"


def test_a_failing_script_step_fails_the_invocation_at_once(agent_run: AgentRun) -> None:
    started = time.monotonic()
    with pytest.raises(AgentError) as caught:
        agent_run([{"terminal": {"command": "true", "kill_after": "soon"}}, {"sleep": 60}])
    assert caught.value.code == "agent_error"
    assert "script step 1 (terminal) failed: ValueError" in caught.value.message
    assert time.monotonic() - started < 10


def test_a_malformed_script_step_is_refused_before_the_agent_starts(
    agent_run: AgentRun,
) -> None:
    with pytest.raises(AgentError) as caught:
        agent_run([{"message": "fine"}, {"write_file": {"path": "a.txt"}}])
    assert caught.value.code == "agent_script_invalid"
    assert "turn 1, step 2: write_file takes {path, content}" in caught.value.message
    assert agent_run.transcript == []


def test_yaml_scripts_are_converted_on_the_host(agent_run: AgentRun) -> None:
    (agent_run.task_dir / "script.yaml").write_text("steps:\n  - message: from yaml\n")
    result = agent_run(options={"script": "script.yaml"})
    assert result.output == "from yaml"


FAKE_AGENT = """
import json, sys
answers = json.loads(sys.argv[1])
for line in sys.stdin:
    message = json.loads(line)
    if "id" in message and "method" in message:
        reply = dict(answers.get(message["method"], {"result": {}}))
        reply.update(jsonrpc="2.0", id=message["id"])
        sys.stdout.write(json.dumps(reply) + "\\n")
        sys.stdout.flush()
"""
READY = {
    "initialize": {"result": {"protocolVersion": 1}},
    "session/new": {"result": {"sessionId": "s1"}},
}


def _answering(answers: dict[str, object]) -> str:
    """An entry for a fake agent that answers each method with a fixed response."""
    return shlex.join([sys.executable, "-c", FAKE_AGENT, json.dumps({**READY, **answers})])


@pytest.mark.parametrize(
    ("answers", "code", "text"),
    [
        ({"initialize": {"result": {"protocolVersion": 2}}}, "agent_protocol_error", "version 2"),
        ({"session/new": {"result": {}}}, "agent_protocol_error", "malformed"),
        (
            {"session/prompt": {"error": {"code": -32000, "message": "model down"}}},
            "agent_error",
            "model down",
        ),
    ],
)
def test_wrong_answers_are_agent_errors(
    agent_run: AgentRun, answers: dict[str, object], code: str, text: str
) -> None:
    with pytest.raises(AgentError) as caught:
        agent_run(entry=_answering(answers))
    assert caught.value.code == code
    assert text in caught.value.message


def test_stop_reason_and_usage_come_from_the_prompt_answer(agent_run: AgentRun) -> None:
    usage = {"totalTokens": 10, "inputTokens": 7, "outputTokens": 3}
    answer = {"result": {"stopReason": "max_tokens", "usage": usage}}
    result = agent_run(entry=_answering({"session/prompt": answer}))
    assert (result.stop_reason, result.usage) == ("max_tokens", usage)


def test_a_failing_recorder_ends_the_invocation(agent_run: AgentRun) -> None:
    def broken_record(action: object) -> None:
        raise OSError("journal disk full")

    invocation = Invocation(
        role="solver",
        prompt="go",
        profile={"entry": "ageval-scripted-agent", "options": {"script": "script.json"}},
        container=agent_run.container,
        deadline=time.monotonic() + 30,
        record=broken_record,
        transcript=agent_run.transcript.append,
        task_dir=str(agent_run.task_dir),
    )
    (agent_run.task_dir / "script.json").write_text(
        '[{"write_file": {"path": "a", "content": "b"}}]'
    )
    with pytest.raises(OSError, match="journal disk full"):
        AcpExecutor(sandbox_factory=LocalSandbox).invoke(invocation)
