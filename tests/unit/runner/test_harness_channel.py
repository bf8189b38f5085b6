"""The harness script that runs run.py in its sandbox container, driven over its real stdin
and stdout by this test in place of ageval: the channel's protocol, without Docker."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agevalx.runner.sandbox import HARNESS

pytestmark = pytest.mark.unit

Answer = Callable[[dict[str, Any]], dict[str, Any]]


def drive(tmp_path: Path, run_py: str, answer: Answer) -> tuple[list[dict[str, Any]], str]:
    """Run `run_py` under the harness, answering each request with `answer`; the requests
    and the end message in order, and what run.py printed."""
    task = tmp_path / "task"
    (task / "prompts").mkdir(parents=True)
    (task / "prompts/task.md").write_text("Write 42.\n")
    (task / "run.py").write_text(run_py)
    document = {
        "task_dir": str(task),
        "run_py": str(task / "run.py"),
        "params": {"level": 3},
        "roles": ["solver", "critic"],
        "workdir": "/attempt/workspace",
    }
    process = subprocess.Popen(
        [sys.executable, "-I", str(HARNESS), json.dumps(document)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    seen: list[dict[str, Any]] = []
    for line in process.stdout:
        message = json.loads(line)  # nothing but the channel's JSON reaches stdout
        seen.append(message)
        if message.get("op") == "done":
            break
        process.stdin.write(json.dumps({"id": message["id"], **answer(message)}) + "\n")
        process.stdin.flush()
    process.stdin.close()
    process.wait(timeout=30)
    assert process.stderr is not None
    return seen, process.stderr.read()


def ok(message: dict[str, Any]) -> dict[str, Any]:
    if message["op"] == "invoke":
        return {"value": {"stop_reason": "end_turn", "output": f"did {message['prompt']}",
                          "exit_code": None, "usage": {"total_tokens": 7}}}  # fmt: skip
    if message["op"] == "exec":
        return {"value": {"exit_code": 0, "output": "hi\n", "timed_out": False}}
    if message["op"] == "read_file":
        return {"value": "42\n"}
    return {"value": None}


def test_run_py_gets_the_in_process_api_and_its_prints_stay_off_the_channel(
    tmp_path: Path,
) -> None:
    run_py = """
import threading

def run(ctx):
    print("starting", ctx.params["level"], ctx.roles, ctx.workdir)
    first = ctx.invoke("solver", ctx.prompt("task.md"))
    assert first.output == "did Write 42.\\n" and first.usage == {"total_tokens": 7}
    assert ctx.exec("echo hi", timeout=5).output == "hi\\n"
    ctx.write_file("notes.txt", "a note")
    assert ctx.read_file("answer.txt") == "42\\n"
    threads = [threading.Thread(target=ctx.invoke, args=("critic", f"look {n}")) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print("done")
"""
    seen, printed = drive(tmp_path, run_py, ok)
    ops = [message["op"] for message in seen]
    assert ops[:4] == ["invoke", "exec", "write_file", "read_file"]
    assert sorted(m["prompt"] for m in seen[4:7]) == ["look 0", "look 1", "look 2"]
    assert ops[-1] == "done" and "error" not in seen[-1], seen[-1]
    assert seen[1] == {"id": 1, "op": "exec", "command": "echo hi", "timeout": 5}
    assert "starting 3 ['solver', 'critic'] /attempt/workspace" in printed and "done" in printed


def test_a_refused_call_raises_in_run_py_as_it_would_in_process(tmp_path: Path) -> None:
    run_py = """
def run(ctx):
    try:
        ctx.read_file("missing.txt")
    except FileNotFoundError:
        print("no such file, as in-process")
    ctx.invoke("solver", "one")
    ctx.invoke("solver", "two")
"""
    answers = iter([
        {"error": {"kind": "not_found", "message": "missing.txt"}},
        ok({"op": "invoke", "prompt": "one"}),
        {"error": {"kind": "quota", "key": "agent_invocations"}},
    ])  # fmt: skip
    seen, printed = drive(tmp_path, run_py, lambda message: next(answers))
    assert "no such file, as in-process" in printed
    error = seen[-1]["error"]
    assert (error["type"], error["message"]) == ("QuotaExhausted", "agent_invocations")


def test_run_py_that_raises_or_escapes_the_task_ends_with_its_error(tmp_path: Path) -> None:
    seen, _ = drive(tmp_path, "def run(ctx):\n    ctx.task_file('../../etc/passwd')\n", ok)
    assert seen[-1]["error"]["type"] == "AgevalError"
    assert "invalid_path" in seen[-1]["error"]["message"]
    seen, _ = drive(tmp_path / "b", "def run(ctx):\n    raise ValueError('broken task')\n", ok)
    error = seen[-1]["error"]
    assert (error["type"], error["message"]) == ("ValueError", "broken task")
    assert "raise ValueError" in error["traceback"]
