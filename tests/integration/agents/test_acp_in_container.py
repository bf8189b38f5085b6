"""The ACP executor and the scripted agent in a real container of the base image."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from agevalx.agents.acp.channel import MAX_NOISE_LINES
from agevalx.agents.base import AgentError, WallTimeExceeded

from .conftest import ContainerRun

pytestmark = pytest.mark.integration

SECRET = "sk-integration-7f3a9c"


def _agent_processes(attempt: ContainerRun) -> list[str]:
    return [line for line in attempt.processes() if "/attempt/.ageval/agent/agent.py" in line]


def test_every_step_type_runs_in_the_container(attempt: ContainerRun) -> None:
    result = attempt.agent(
        [
            {"message": "working"},
            {"write_file": {"path": "notes/plan.md", "content": "step one\nstep two\n"}},
            {"read_file": {"path": "notes/plan.md", "line": 2}},
            {"terminal": "cat notes/plan.md | wc -l; echo warn >&2; exit 2"},
            {
                "terminal": {
                    "command": "sh",
                    "args": ["-c", 'echo "$WHO in $(pwd)"'],
                    "env": {"WHO": "terminal"},
                    "cwd": "notes",
                }
            },
            {"permission": {"title": "write outside?"}},
            {"bash_tool": "touch made-by-tool; ls; exit 6"},
            {"request": {"method": "terminal/teleport", "params": {}}},
            {"garbage": "a stray print"},
            {"flood": 2000},
            {"sleep": 0.1},
            {"message": " done"},
        ]
    )
    assert (result.stop_reason, result.output) == ("end_turn", "working done")
    assert attempt.sh("cat /attempt/workspace/notes/plan.md").stdout == "step one\nstep two\n"
    assert attempt.sh("test -e /attempt/workspace/made-by-tool").returncode == 0
    reports = {report["step"]: report["result"] for report in attempt.step_results()}
    assert reports[3] == {"result": {"content": "step two\n"}}
    assert reports[4]["exit"] == {"exitCode": 2}
    assert reports[4]["output"]["output"] == "2\nwarn\n"
    assert reports[5]["output"]["output"] == "terminal in /attempt/workspace/notes\n"
    assert reports[6]["result"]["outcome"] == {"outcome": "selected", "optionId": "allow"}
    assert reports[8]["error"]["code"] == -32601
    assert [a.type for a in attempt.actions if a.type != "terminal"] == [
        "fs_write",
        "fs_read",
        "permission",
        "agent_tool",
    ]
    (tool,) = attempt.of_type("agent_tool")
    assert (tool.exit_code, tool.cwd) == (6, "/attempt/workspace")
    assert "made-by-tool" in (tool.output or "")
    assert not _agent_processes(attempt)


def test_paths_outside_the_roots_are_refused(attempt: ContainerRun) -> None:
    attempt.agent(
        [
            {"write_file": {"path": "../../etc/ageval-escape", "content": "x"}},
            {"read_file": "/etc/shadow"},
            {"write_file": {"path": "/tmp/scratch/ok.txt", "content": "fine"}},
        ]
    )
    assert attempt.sh("test -e /etc/ageval-escape").returncode != 0
    assert attempt.sh("cat /tmp/scratch/ok.txt").stdout == "fine"
    refused = [a for a in attempt.actions if "refused" in a.detail]
    assert [(a.type, a.path) for a in refused] == [
        ("fs_write", "/attempt/workspace/../../etc/ageval-escape"),
        ("fs_read", "/etc/shadow"),
    ]


def test_permission_requests_follow_the_deny_policy(attempt: ContainerRun) -> None:
    attempt.agent([{"permission": {"title": "rm -rf /"}}], options={"permissions": "deny"})
    (action,) = attempt.of_type("permission")
    assert action.detail["choice"] == "reject"


def test_wall_time_cancels_then_kills_the_agent(attempt: ContainerRun) -> None:
    started = time.monotonic()
    with pytest.raises(WallTimeExceeded):
        attempt.agent([{"sleep": 60}], seconds=2.0)
    assert time.monotonic() - started < 10
    assert not _agent_processes(attempt)


def test_wall_time_kills_a_command_the_agent_is_waiting_for(attempt: ContainerRun) -> None:
    with pytest.raises(WallTimeExceeded):
        attempt.agent([{"terminal": "sleep 301"}], seconds=2.0)
    assert not [line for line in attempt.processes() if "sleep 301" in line]
    assert not _agent_processes(attempt)


def test_terminal_kill_stops_the_command_in_the_container(attempt: ContainerRun) -> None:
    attempt.agent([{"terminal": {"command": "sleep 302 & sleep 303", "kill_after": 0.5}}])
    assert attempt.step_results()[0]["result"]["exit"] == {"signal": "SIGKILL"}
    assert not [line for line in attempt.processes() if "sleep 30" in line]


def test_a_crashing_agent_is_an_error_with_its_stderr(attempt: ContainerRun) -> None:
    with pytest.raises(AgentError) as caught:
        attempt.agent([{"crash": 3}])
    assert caught.value.code == "agent_crashed"
    assert "exited with code 3" in caught.value.message
    assert "crash step" in caught.value.stderr_tail


def test_an_entry_missing_from_the_image_is_a_crash(attempt: ContainerRun) -> None:
    with pytest.raises(AgentError) as caught:
        attempt.agent(entry="pi-acp-not-installed")
    assert caught.value.code == "agent_crashed"
    assert "not found" in caught.value.stderr_tail


def test_an_agent_flooding_stdout_is_stopped(attempt: ContainerRun) -> None:
    with pytest.raises(AgentError) as caught:
        attempt.agent([{"flood": 8192 * MAX_NOISE_LINES}, {"sleep": 60}])
    assert caught.value.code == "agent_protocol_error"
    assert not _agent_processes(attempt)


def test_secrets_reach_the_agent_but_never_a_command_line_or_a_record(
    attempt: ContainerRun,
) -> None:
    seen_on_host: list[str] = []
    done = threading.Event()

    def watch_host_processes() -> None:
        while not done.is_set():
            for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
                try:
                    if SECRET.encode() in cmdline.read_bytes():
                        seen_on_host.append(str(cmdline))
                except OSError:
                    pass
            time.sleep(0.05)

    watcher = threading.Thread(target=watch_host_processes, daemon=True)
    watcher.start()
    try:
        result = attempt.agent(
            [
                {"bash_tool": 'printf %s "$MODEL_API_KEY" > key.txt; echo "key=$MODEL_API_KEY"'},
                {"sleep": 0.5},
                {"message": f"my key is {SECRET}"},
            ],
            environ={"MODEL_API_KEY": SECRET},
        )
    finally:
        done.set()
        watcher.join()
    assert attempt.sh("cat /attempt/workspace/key.txt").stdout == SECRET
    assert not seen_on_host
    assert SECRET not in repr(attempt.actions) + repr(attempt.transcript) + result.output
    assert attempt.of_type("agent_tool")[0].output == "key=***\n"
