"""The pure pieces of the ACP executor: paths, output buffers, tool tracking, policy, masking."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from acp.schema import PermissionOption, ToolCallProgress, ToolCallStart

from agevalx.agents import scripted
from agevalx.agents.acp.client import choose_option
from agevalx.agents.acp.paths import PathRefused, normalize, resolve_allowed
from agevalx.agents.acp.sandbox import (
    DockerSandbox,
    FileBlob,
    LaunchRequest,
    staging_dir,
    tar_bytes,
)
from agevalx.agents.acp.terminals import OutputBuffer, split_pid_line
from agevalx.agents.acp.tools import AgentToolTracker, real_exit_code
from agevalx.agents.base import Container
from agevalx.redaction import Redactor

pytestmark = pytest.mark.unit

ROOTS = ("/attempt/workspace", "/attempt/home", "/tmp")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("a/b.txt", "/attempt/workspace/a/b.txt"),
        ("./a/../b", "/attempt/workspace/b"),
        ("/tmp/x", "/tmp/x"),
        ("//tmp//x/", "/tmp/x"),
        ("../home/.bashrc", "/attempt/home/.bashrc"),
        ("/attempt/workspace", "/attempt/workspace"),
    ],
)
def test_paths_inside_the_roots_are_normalized(path: str, expected: str) -> None:
    assert resolve_allowed(path, "/attempt/workspace", ROOTS) == expected


@pytest.mark.parametrize(
    "path",
    ["/etc/passwd", "../../etc/passwd", "/attempt/workspace-evil/x", "/attempt", "/tmpx", "a\0b"],
)
def test_paths_outside_the_roots_are_refused(path: str) -> None:
    with pytest.raises(PathRefused):
        resolve_allowed(path, "/attempt/workspace", ROOTS)


def test_normalize_never_keeps_a_double_leading_slash() -> None:
    assert normalize("//etc", "/") == "/etc"


def test_output_buffer_keeps_the_tail_at_a_character_boundary() -> None:
    buffer = OutputBuffer(5)
    buffer.feed("aé".encode())
    assert (buffer.text(), buffer.truncated) == ("aé", False)
    buffer.feed("éé".encode())
    assert (buffer.text(), buffer.truncated) == ("éé", True)


def test_output_buffer_with_zero_limit_keeps_nothing() -> None:
    buffer = OutputBuffer(0)
    buffer.feed(b"abc")
    assert (buffer.text(), buffer.truncated) == ("", True)


def test_the_pid_announcement_is_split_off_the_output() -> None:
    assert split_pid_line(b"ageval-pid 42\nhello") == (42, b"hello")
    assert split_pid_line(b"hello\nworld") == (None, b"hello\nworld")
    assert split_pid_line(b"ageval-pid 42") == (None, b"ageval-pid 42")


@pytest.mark.parametrize(
    ("reported", "output", "expected"),
    [
        (1, "boom\n\nCommand exited with code 7", 7),
        (1, "Command exited with code 2\nCommand exited with code 3", 3),
        (1, "plain failure", 1),
        (None, "Command exited with code 4", 4),
        (0, "grep found: Command exited with code 9", 0),
    ],
)
def test_the_real_exit_code_comes_from_pi_output_text(
    reported: int | None, output: str, expected: int
) -> None:
    assert real_exit_code(reported, output) == expected


def _start(call_id: str = "c1", **fields: Any) -> ToolCallStart:
    return ToolCallStart.model_validate(
        {"sessionUpdate": "tool_call", "toolCallId": call_id, "title": "ls", **fields}
    )


def _progress(call_id: str = "c1", **fields: Any) -> ToolCallProgress:
    return ToolCallProgress.model_validate(
        {"sessionUpdate": "tool_call_update", "toolCallId": call_id, **fields}
    )


def test_execute_tool_calls_are_recorded_once_when_they_complete() -> None:
    tracker = AgentToolTracker("/attempt/workspace")
    meta = {"terminal_info": {"terminal_id": "c1", "cwd": "/attempt/workspace/sub"}}
    assert (
        tracker.observe(_start(kind="execute", rawInput={"command": "ls -la"}, _meta=meta)) is None
    )
    assert tracker.observe(_progress(_meta={"terminal_output": {"data": "a\n"}})) is None
    done = _progress(
        status="completed",
        _meta={"terminal_output": {"data": "b\n"}, "terminal_exit": {"exit_code": 0}},
    )
    action = tracker.observe(done)
    assert action is not None
    assert (action.type, action.command, action.cwd) == (
        "agent_tool",
        "ls -la",
        meta["terminal_info"]["cwd"],
    )
    assert (action.output, action.exit_code) == ("a\nb\n", 0)
    assert tracker.observe(_progress(status="completed")) is None


def test_execute_calls_without_meta_use_their_content_text() -> None:
    tracker = AgentToolTracker("/w")
    tracker.observe(_start(kind="execute", title="make"))
    content = [{"type": "content", "content": {"type": "text", "text": "```console\nbuilt\n```"}}]
    action = tracker.observe(_progress(status="failed", content=content))
    assert action is not None
    assert (action.command, action.output, action.exit_code, action.cwd) == (
        "make",
        "built",
        None,
        "/w",
    )


@pytest.mark.parametrize(
    "raw",
    [
        {"output": "no /x\n", "metadata": {"output": "no /x\n", "exit": 3}},  # opencode
        {"content": [{"type": "text", "text": "no /x\n"}], "details": {"exitCode": 3}},  # openclaw
    ],
)
def test_an_exit_code_in_raw_output_is_read(raw: dict[str, Any]) -> None:
    """The command in rawInput, the output in the content, the exit code in rawOutput."""
    tracker = AgentToolTracker("/w")
    tracker.observe(_start(kind="execute", rawInput={"command": "ls /x; exit 3", "cwd": "/w"}))
    content = [{"type": "content", "content": {"type": "text", "text": "no /x\n"}}]
    action = tracker.observe(_progress(status="completed", content=content, rawOutput=raw))
    assert action is not None
    assert (action.command, action.output, action.exit_code) == ("ls /x; exit 3", "no /x\n", 3)


def test_other_tool_kinds_are_not_commands() -> None:
    tracker = AgentToolTracker("/w")
    tracker.observe(_start(kind="read", title="read a.txt"))
    assert tracker.observe(_progress(status="completed")) is None


def test_argv_raw_input_is_joined_into_a_command_line() -> None:
    tracker = AgentToolTracker("/w")
    tracker.observe(_start(kind="execute", rawInput={"command": ["echo", "a b"]}))
    action = tracker.observe(_progress(status="completed"))
    assert action is not None and action.command == "echo 'a b'"


def _options(*kinds: str) -> list[PermissionOption]:
    return [
        PermissionOption(option_id=f"o{i}", name=kind, kind=kind) for i, kind in enumerate(kinds)
    ]


def test_permission_policy_picks_the_first_option_of_its_kind() -> None:
    options = _options("reject_once", "allow_once", "allow_always")
    assert choose_option(options, "allow") == options[1]
    assert choose_option(options, "deny") == options[0]
    assert choose_option(_options("reject_always"), "allow") == _options("reject_always")[0]
    assert choose_option([], "allow") is None


def test_secret_values_are_masked_everywhere_but_short_settings_are_not() -> None:
    redactor = Redactor(["sk-secret-value", "1"])
    masked = redactor.value({"a": ["x sk-secret-value y", 1], "b": "1"})
    assert masked == {"a": ["x *** y", 1], "b": "1"}


def test_docker_exec_passes_secrets_by_name_only() -> None:
    sandbox = DockerSandbox(Container(id="cid", user="agent"))
    spec = sandbox.spec(
        LaunchRequest(
            argv=["pi-acp"],
            workdir="/attempt/workspace",
            env={"HOME": "/attempt/home"},
            secrets={"API_KEY": "sk-hidden-123"},
            stdin=True,
            report_pid=True,
        )
    )
    assert spec.argv[1:9] == [
        "exec",
        "-i",
        "-u",
        "agent",
        "-w",
        "/attempt/workspace",
        "-e",
        "HOME=/attempt/home",
    ]
    assert spec.argv[9:12] == ["-e", "API_KEY", "cid"]
    assert spec.argv[-1] == "pi-acp"
    assert "sk-hidden-123" not in " ".join(spec.argv)
    assert spec.env["API_KEY"] == "sk-hidden-123"


def test_files_are_staged_beside_the_workspace() -> None:
    assert staging_dir(Container(id="c"), "agent") == "/attempt/.ageval/agent"


def test_the_tar_places_files_under_the_directory() -> None:
    data = tar_bytes("/attempt/.ageval/agent", {"agent.py": FileBlob(b"print()", 0o755)})
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        (member,) = archive.getmembers()
        assert (member.name, member.mode, member.size) == (
            "attempt/.ageval/agent/agent.py",
            0o755,
            7,
        )


def test_yaml_scripts_become_json(tmp_path: Path) -> None:
    path = tmp_path / "script.yaml"
    path.write_text("turns:\n  - - message: hi\n    - terminal: ls\n")
    assert json.loads(scripted.script_json(path)) == {
        "turns": [[{"message": "hi"}, {"terminal": "ls"}]]
    }
    path.write_text("just text")
    with pytest.raises(ValueError, match="must be a mapping or a list"):
        scripted.script_json(path)
