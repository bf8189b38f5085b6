"""The runner server (`runners`, `runner_server.py`): harbor imported once, a runner forked per
invocation with exactly its environment, in a session of its own, on this process's pipes.

The real `runner_server.py` runs here beside a stand-in `agent_runner.py` (the real one needs
harbor: tests/integration/harbor/test_harbor_agent.py runs it with terminus-2). The stand-in
counts its imports in a file, answers `describe`, and its `run` echoes what it was given;
empty modules stand in for the harbor modules the server imports before any fork.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agevalx.errors import AgevalError
from agevalx.formats.harbor import agents, runner_server, runners

pytestmark = pytest.mark.unit

STAND_IN = """
import json, os, sys, time
with open(os.environ["COUNT_FILE"], "a") as count:
    count.write("imported\\n")
if os.environ.get("FAIL_IMPORT"):
    raise ImportError("no module named harbor")

def describe(name):
    return {"version": "9.9", "names": [name], "agent": {"name": name, "installed": False}}

def main(argv):
    config = json.loads(sys.stdin.readline())
    if config.get("sleep"):
        time.sleep(config["sleep"])
    print("to stderr", file=sys.stderr)
    sys.stdout.write(json.dumps({
        "op": "done",
        "argv": argv,
        "env": dict(os.environ),
        "session": os.getsid(0),
        "pid": os.getpid(),
        "parent": os.getppid(),
        "config": config,
    }) + "\\n")
    return config.get("exit", 0)
"""


@pytest.fixture
def program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The real server beside the stand-in runner; the file counting the stand-in's imports."""
    folder = tmp_path / "program"
    folder.mkdir()
    shutil.copy(runners.SERVER, folder / runners.SERVER.name)
    (folder / "agent_runner.py").write_text(STAND_IN)
    for module in runner_server.RUN_MODULES:  # empty stand-ins the server imports up front
        path = folder.joinpath(*module.split(".")).with_suffix(".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    monkeypatch.setattr(runners, "SERVER", folder / runners.SERVER.name)
    yield tmp_path / "imports.txt"
    runners.close_all()


def base(count: Path, **extra: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "COUNT_FILE": str(count), **extra}


def run(runner: runners.Runner, config: dict[str, object]) -> dict[str, object]:
    runner.stdin.write(json.dumps(config) + "\n")
    runner.stdin.flush()
    answer: dict[str, object] = json.loads(runner.stdout.readline())
    return answer


def test_runners_fork_from_one_server_that_imported_once_each_with_its_own_environment(
    program: Path,
) -> None:
    server = runners.server(sys.executable, "terminus-2", base(program, SERVER_ONLY="1"))
    assert server.answer["version"] == "9.9"
    answers = []
    for number in range(3):
        environment = {"PATH": os.environ["PATH"], "NUMBER": str(number)}
        runner = runners.start(sys.executable, "terminus-2", base(program), environment)
        answers.append(run(runner, {"n": number, "exit": number}))
        assert runner.wait(10) == number
        assert runner.stderr.read() == "to stderr\n"
    assert program.read_text() == "imported\n", "the runner was imported more than once"
    for number, answer in enumerate(answers):
        assert answer["argv"] == ["run"] and answer["config"] == {"n": number, "exit": number}
        assert answer["env"] == {"PATH": os.environ["PATH"], "NUMBER": str(number)}
        assert answer["parent"] == server.process.pid, "not forked by the server"
        assert answer["session"] == answer["pid"], "not in a session of its own"
    assert len({answer["pid"] for answer in answers}) == 3


def test_a_runner_killed_in_its_session_ends_with_the_signal(program: Path) -> None:
    runner = runners.start(sys.executable, "t", base(program), base(program))
    assert runner.poll() is None
    runner.stdin.write(json.dumps({"sleep": 60}) + "\n")
    runner.stdin.flush()
    os.killpg(runner.pid, signal.SIGKILL)
    assert runner.wait(10) == -signal.SIGKILL
    assert runner.poll() == -signal.SIGKILL
    with pytest.raises(ProcessLookupError):
        os.kill(runner.pid, 0)


def test_wait_gives_up_after_its_timeout_and_the_runner_can_still_be_killed(
    program: Path,
) -> None:
    runner = runners.start(sys.executable, "t", base(program), base(program))
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        runner.wait(0.3)
    assert time.monotonic() - started < 5
    runner.kill()
    assert runner.wait(10) == -signal.SIGKILL


def test_the_server_ends_when_its_stdin_closes_and_its_folder_goes(program: Path) -> None:
    server = runners.server(sys.executable, "t", base(program))
    assert Path(server.socket).exists()
    runners.close_all()
    assert server.process.returncode == 0
    assert not server.folder.exists()


def test_a_dead_server_is_started_again_for_the_next_runner(program: Path) -> None:
    first = runners.server(sys.executable, "t", base(program))
    os.killpg(first.process.pid, signal.SIGKILL)
    first.process.wait(10)
    runner = runners.start(sys.executable, "t", base(program), base(program))
    assert run(runner, {})["parent"] != first.process.pid
    assert runner.wait(10) == 0
    assert program.read_text() == "imported\nimported\n"


def test_a_malformed_request_is_dropped_and_the_server_serves_on(program: Path) -> None:
    server = runners.server(sys.executable, "t", base(program))
    for request in (b"not json\n", b'{"env": {"A": 1}}\n', b'{"env": {}}\n'):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(10)
            connection.connect(server.socket)
            connection.sendall(request)  # no descriptors: refused too
            assert connection.recv(100) == b"", "the server answered a malformed request"
    runner = runners.start(sys.executable, "t", base(program), base(program))
    assert run(runner, {"x": 1})["config"] == {"x": 1}
    assert runner.wait(10) == 0


def test_a_python_that_cannot_import_harbor_is_the_coded_error_with_its_stderr(
    program: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agents, "runner_environment", lambda: base(program, FAIL_IMPORT="1"))
    with pytest.raises(AgevalError) as caught:
        agents.describe(sys.executable, "terminus-2")
    assert caught.value.code == agents.NOT_INSTALLED and caught.value.field == "--agent"
    assert caught.value.hint is not None and "no module named harbor" in caught.value.hint
    assert runners._servers == {}


def test_the_server_ends_and_leaves_nothing_when_the_process_that_started_it_is_killed(
    program: Path,
) -> None:
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from agevalx.formats.harbor import runners\n"
        "runners.SERVER = Path(sys.argv[1])\n"
        "server = runners.server(sys.executable, 't', json.loads(sys.argv[2]))\n"
        "print(server.process.pid, server.folder, flush=True)\n"
        "sys.stdin.read()\n"
    )
    starter = subprocess.Popen(
        [sys.executable, "-c", script, str(runners.SERVER), json.dumps(base(program))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert starter.stdout is not None
    pid, folder = starter.stdout.readline().split()
    assert Path(folder, "s").exists()
    starter.kill()
    starter.wait()
    deadline = time.monotonic() + 10
    while _running(int(pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(int(pid)), "the server outlived the process that started it"
    assert not Path(folder).exists(), "the server left its folder"


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"
