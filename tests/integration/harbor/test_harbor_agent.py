"""Harbor's own agents through the installed harbor package: `--agent harbor:terminus-2`.

The real terminus-2 of the pinned harbor (its own venv, `agevalx.testing.harbor`) runs on the
host in Harbor's Python and drives a tmux session in ageval's attempt container, tmux coming
from ageval's bundle; its LiteLLM calls go to the mock model behind the gateway. On
harbor-demo's `hello` and on an ageval task, like every catalog agent (`AgentHarness`): the
attempt PASSes; the real key is nowhere in the container, and neither is the gateway's token
(terminus-2 talks to its model from the host); tokens are counted, model.jsonl is written,
`ageval replay --model-traffic` scores the same; every command is a terminal action.
A Harbor agent that installs itself over the network in the container is refused before
anything starts.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from agevalx.agents import bundles
from agevalx.agents.catalog.base import provider_named
from agevalx.agents.mockllm import MockLLM
from agevalx.cli import main
from agevalx.formats.harbor import agents as harbor_agents
from agevalx.formats.harbor import runners
from agevalx.testing.harbor import VENV
from tests.integration.agents.catalog.harness import (
    AGEVAL_DATASET,
    HARBOR_DEMO,
    PROBE,
    SCRIPTS,
    SOLVE,
    AgentHarness,
    Attempt,
    _docker,
    probe_of_a_keyless_image,
)
from tests.integration.harbor.test_parity import _install_harbor

AGENT = "harbor:terminus-2"
MODEL = "openai/gpt-5.4-mini"


def terminus_script() -> list[dict[str, Any]]:
    """hello-terminus-2.yaml with its solving keystrokes preceded by the probe: terminus-2's
    replies are JSON texts, so the keystrokes are rewritten inside the parsed JSON."""
    replies = yaml.safe_load((SCRIPTS / "hello-terminus-2.yaml").read_text())
    rewritten = 0
    for reply in replies:
        answer = json.loads(reply["message"])
        for command in answer["commands"]:
            if command["keystrokes"] == SOLVE + "\n":
                command["keystrokes"] = f"{PROBE}; {SOLVE}; echo 42 > answer.txt\n"
                rewritten += 1
        reply["message"] = json.dumps(answer)
    assert rewritten == 1, f"hello-terminus-2.yaml must type `{SOLVE}` once"
    return list(replies)


class HarborHarness(AgentHarness):
    """`AgentHarness` for `--agent harbor:terminus-2` (not an agent of the catalog)."""

    def __init__(
        self,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        provider = provider_named("openai")
        assert provider is not None
        self.agent = None
        self.model = MODEL
        self.provider = provider
        self.api = "openai-chat"
        self.tmp_path = tmp_path
        self.monkeypatch = monkeypatch
        self.capsys = capsys
        try:
            bundles.ensure_bundle(harbor_agents.TMUX.name)
        except bundles.BundleError as exc:
            pytest.fail(f"the tmux bundle cannot be built: {exc.code}: {exc.message} {exc.hint}")

    @property
    def agent_name(self) -> str:
        return AGENT

    @contextlib.contextmanager
    def _model(self) -> Iterator[MockLLM]:
        with MockLLM(terminus_script()) as server:
            self.monkeypatch.setenv(
                self.provider.base_url_variable, f"http://localhost:{server.port}/v1"
            )
            yield server

    def run_with(self, source: Path, task: str, extra: tuple[str, ...]) -> Attempt:
        """`run` with more command-line arguments."""
        secret = f"sk-terminus-2-test-{uuid.uuid4().hex}"
        self.monkeypatch.setenv(self.provider.key_variable, secret)
        dataset = self._copy(source)
        command = ["run", str(dataset), "--agent", AGENT, "--model", MODEL, "--task", task]
        with self._model() as server:
            code = main([*command, *extra, "--keep-recovery-state", "--json"])
            requests = len(server.completions)
        (result,) = json.loads(self.capsys.readouterr().out)["results"]
        assert code == 0 and result["status"] == "PASS", json.dumps(result, indent=2)
        return Attempt(dataset, result, secret, requests)

    def check_key_absent(self, attempt: Attempt) -> None:
        """The real key is in no process, file or image metadata of the container; the
        gateway's token is not there either (the model is called from the host)."""
        run_key = next(n["key"] for n in attempt.result["nodes"] if n["kind"] == "run")
        from tests.integration.conftest import committed_image

        probe = probe_of_a_keyless_image(committed_image(run_key), attempt.secret)
        assert "tmux" in probe and "bash --login" in probe, "the probe ran in terminus' tmux"
        assert attempt.secret not in probe
        assert "ageval-gw-" not in probe and "AGEVAL_API_KEY" not in probe

    def check_terminal_actions(self, attempt: Attempt) -> None:
        """Every command terminus-2 ran is a terminal action, its keystrokes among them."""
        lines = (attempt.directory / "activity.jsonl").read_text().splitlines()
        actions = [json.loads(line) for line in lines]
        terminal = [a for a in actions if a["type"] == "terminal"]
        assert terminal and all(a["detail"]["executor"] == "harbor" for a in terminal)
        assert all(a["detail"]["agent"] == "terminus-2" for a in terminal)
        sent = [a for a in terminal if "tmux send-keys" in a["command"]]
        assert any(SOLVE in a["command"] for a in sent), sent
        assert any("tmux new-session" in a["command"] for a in terminal)
        assert all(a["exit_code"] is not None for a in terminal)
        assert attempt.secret not in "\n".join(lines)

    def check_transcript(self, attempt: Attempt) -> None:
        """terminus-2's messages and keystrokes are in the transcript as ACP updates."""
        lines = (attempt.directory / "transcript.jsonl").read_text().splitlines()
        updates = [e["update"] for e in map(json.loads, lines) if e["type"] == "session_update"]
        messages = [u for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
        assert len(messages) == 3 and "Plan: Confirm" in messages[-1]["content"]["text"]
        calls = [u for u in updates if u["sessionUpdate"] == "tool_call"]
        assert any(SOLVE in json.dumps(call["rawInput"]) for call in calls), calls


@dataclass
class Fork:
    """A runner the server forked: the server's pid, the runner's, and the runner's parent."""

    server: int
    runner: int
    parent: int


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[Fork]:
    """Every runner forked from here on, recorded as it starts (before it reads its config)."""
    made: list[Fork] = []
    spawn = runners.Server.spawn

    def recorded(server: runners.Server, environment: dict[str, str]) -> runners.Runner:
        runner = spawn(server, environment)
        stat = Path(f"/proc/{runner.pid}/stat").read_text()
        parent = int(stat.rpartition(")")[2].split()[1])
        made.append(Fork(server.process.pid, runner.pid, parent))
        return runner

    monkeypatch.setattr(runners.Server, "spawn", recorded)
    return made


@pytest.fixture
def harbor_python(monkeypatch: pytest.MonkeyPatch) -> str:
    _install_harbor()
    python = str(VENV / "bin" / "python")
    monkeypatch.setenv(harbor_agents.PYTHON_ENV, python)
    return python


@pytest.mark.integration
@pytest.mark.slow
def test_terminus_2_solves_harbor_hello_and_an_ageval_task(
    harbor_python: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    docker_engine: object,
) -> None:
    harness = HarborHarness(tmp_path, monkeypatch, capsys)
    for attempt in (harness.harbor_hello(), harness.ageval_task()):
        assert attempt.result["agents"] == {"solver": AGENT}
        assert attempt.requests == 3, "terminus-2 confirms task_complete: three model turns"
        harness.check_terminal_actions(attempt)
        harness.check_transcript(attempt)
        harness.check_all(attempt)


@pytest.mark.integration
@pytest.mark.parametrize(
    ("agent", "code", "said"),
    [
        ("harbor:claude-code", "harbor_agent_needs_network", "over the network"),
        ("harbor:no-such-agent", "harbor_agent_unknown", "terminus-2"),
        ("harbor:oracle", "harbor_agent_unsupported", "--agent oracle"),
    ],
)
def test_a_harbor_agent_ageval_cannot_run_offline_is_refused_before_any_container(
    harbor_python: str,
    agent: str,
    code: str,
    said: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused")
    dataset = tmp_path / "harbor-demo"
    shutil.copytree(HARBOR_DEMO / "hello", dataset / "hello")
    command = ["run", str(dataset), "--task", "hello", "--agent", agent, "--model", MODEL]
    exit_code = main([*command, "--json"])
    document = json.loads(capsys.readouterr().out)
    assert exit_code == 2, document
    error = document["error"]
    assert error["code"] == code and error["field"] == "--agent", error
    assert said in f"{error['message']} {error['hint']}", error
    assert not (dataset / ".ageval" / "runs").exists(), "nothing ran"


@pytest.mark.integration
def test_harbors_nop_agent_runs_without_a_model_and_does_nothing(
    harbor_python: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    docker_engine: object,
) -> None:
    dataset = tmp_path / "harbor-demo"
    shutil.copytree(HARBOR_DEMO / "hello", dataset / "hello")
    command = ["run", str(dataset), "--task", "hello", "--agent", "harbor:nop"]
    exit_code = main([*command, "--keep-recovery-state", "--json"])
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert result["status"] == "FAIL" and result["error"] is None, result
    assert result["agents"] == {"solver": "harbor:nop"} and exit_code == 0
    activity = dataset / ".ageval" / "runs" / result["attempt_id"] / "activity.jsonl"
    kinds = [json.loads(line)["type"] for line in activity.read_text().splitlines()]
    assert "terminal" not in kinds and "invocation" in kinds


@pytest.mark.integration
@pytest.mark.slow
def test_terminus_2_runs_again_in_the_same_container_for_a_second_invocation(
    harbor_python: str,
    forks: list[Fork],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    docker_engine: object,
) -> None:
    """terminus-2 names its tmux session after itself: the session of the first invocation
    is ended (a recorded step of ageval's) before the second starts its own."""
    HarborHarness(tmp_path, monkeypatch, capsys)  # the tmux bundle, built once
    dataset = tmp_path / "two-turns"
    shutil.copytree(AGEVAL_DATASET, dataset)
    task = dataset / "tasks" / "write-answer"
    task_yaml = task / "task.yaml"
    task_yaml.write_text(
        task_yaml.read_text().replace("agent_invocations: 1", "agent_invocations: 2")
    )
    (task / "run.py").write_text(
        "def run(ctx):\n"
        '    ctx.invoke("solver", ctx.prompt("task.md"))\n'
        '    ctx.invoke("solver", "Check that answer.txt holds 42.")\n'
    )
    replies = yaml.safe_load((SCRIPTS / "hello-terminus-2.yaml").read_text())
    for reply in replies:
        reply["message"] = reply["message"].replace(SOLVE, "echo 42 > answer.txt")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-two-turns")
    with MockLLM(replies + replies) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://localhost:{server.port}/v1")
        command = ["run", str(dataset), "--agent", AGENT, "--model", MODEL]
        exit_code = main([*command, "--keep-recovery-state", "--json"])
        served = len(server.completions)
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert exit_code == 0 and result["status"] == "PASS", result
    assert result["invocations"] == 2 and served == 6
    activity = dataset / ".ageval" / "runs" / result["attempt_id"] / "activity.jsonl"
    actions = [json.loads(line) for line in activity.read_text().splitlines()]
    ended = [a for a in actions if a["type"] == "terminal" and "kill-server" in a["command"]]
    assert [a["detail"]["by"] for a in ended] == ["ageval", "ageval"]
    started = [a for a in actions if a["type"] == "terminal" and "new-session" in a["command"]]
    assert [a["exit_code"] for a in started] == [0, 0]
    # both runners were forked by one server, which imported harbor and terminus-2 once
    assert len(forks) == 2 and len({fork.server for fork in forks}) == 1, forks
    assert all(fork.parent == fork.server for fork in forks), forks


@pytest.mark.integration
@pytest.mark.slow
def test_terminus_2_is_stopped_at_the_wall_time(
    harbor_python: str,
    forks: list[Fork],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    docker_engine: object,
) -> None:
    """A command the model waits a minute for outlives a 20 s wall time: the runner is
    killed, the attempt's limit is the wall time and the verifier still scores."""
    HarborHarness(tmp_path, monkeypatch, capsys)
    dataset = tmp_path / "slow"
    shutil.copytree(AGEVAL_DATASET, dataset)
    task_yaml = dataset / "tasks" / "write-answer" / "task.yaml"
    text = task_yaml.read_text().replace("wall_time_seconds: 300", "wall_time_seconds: 20")
    task_yaml.write_text(text)
    wait = {"keystrokes": "sleep 300\n", "duration": 60}
    reply = {"analysis": "a", "plan": "b", "commands": [wait], "task_complete": False}
    monkeypatch.setenv("OPENAI_API_KEY", "sk-slow")
    with MockLLM([{"message": json.dumps(reply)}]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://localhost:{server.port}/v1")
        command = ["run", str(dataset), "--agent", AGENT, "--model", MODEL]
        main([*command, "--json"])
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert result["status"] == "FAIL" and result["limit"] == "wall_time_seconds", result
    assert 19 < result["seconds"]["run"] < 40, result["seconds"]
    # the runner and everything in its session (LiteLLM's workers) were killed
    (fork,) = forks
    left = subprocess.run(["pgrep", "-s", str(fork.runner)], capture_output=True, text=True)
    assert left.stdout == "", f"the runner's session was left running: {left.stdout}"


@pytest.mark.integration
@pytest.mark.slow
def test_a_key_the_job_hands_the_agent_stays_on_the_host(
    harbor_python: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    docker_engine: object,
) -> None:
    """Harbor job configs pass the key in the agent's env; terminus-2 would put it into its
    tmux session: ageval drops it there, and the gateway's token goes to LiteLLM instead."""
    harness = HarborHarness(tmp_path, monkeypatch, capsys)
    agent_env = {"agent_env": {"OPENAI_API_KEY": "${OPENAI_API_KEY}", "MARK": "kept"}}
    attempt = harness.run_with(HARBOR_DEMO, "hello", ("--env-params", json.dumps(agent_env)))
    harness.check_key_absent(attempt)
    harness.check_usage(attempt)
    lines = (attempt.directory / "activity.jsonl").read_text().splitlines()
    started = [a for a in map(json.loads, lines) if "new-session" in (a.get("command") or "")]
    assert "MARK=kept" in started[0]["command"] and "OPENAI_API_KEY" not in started[0]["command"]


NO_LIBC_IMAGE = "ageval-test/harbor-tmux-no-libc:1"
NO_LIBC_DOCKERFILE = """FROM scratch
COPY busybox /bin/busybox
RUN ["/bin/busybox", "--install", "-s", "/bin"]
RUN mkdir -p -m 1777 /tmp
"""


@pytest.mark.integration
def test_the_tmux_bundle_runs_on_an_image_without_a_c_library(
    tmp_path: Path, docker_engine: object
) -> None:
    """An image of Debian's static busybox alone (no libc, no locale): the bundle's tmux
    starts a session there on its own loader, C library and C.UTF-8."""
    bundle = bundles.ensure_bundle(harbor_agents.TMUX.name)
    context = tmp_path / "context"
    context.mkdir()
    subprocess.run(["apt-get", "download", "busybox-static"], cwd=tmp_path, check=True)
    (deb,) = tmp_path.glob("busybox-static_*.deb")
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp_path / "x")], check=True)
    shutil.copy2(tmp_path / "x" / "bin" / "busybox", context / "busybox")
    (context / "Dockerfile").write_text(NO_LIBC_DOCKERFILE)
    _docker("build", "-q", "-t", NO_LIBC_IMAGE, str(context))
    script = (
        "export PATH=/opt/tmux/bin:$PATH; tmux -V; ls /lib /usr/lib 2>&1;"
        " tmux new-session -d -s t sh && tmux send-keys -t t -- 'echo made-by-tmux > /tmp/o'"
        " Enter && sleep 1 && cat /tmp/o"
    )
    mount = f"{bundle.path}:/opt/tmux:ro"
    done = _docker("run", "--rm", "-v", mount, NO_LIBC_IMAGE, "sh", "-c", script, check=False)
    assert "tmux 3.3a" in done.stdout and "made-by-tmux" in done.stdout, done
    assert "No such file or directory" in done.stdout, "the image has a /lib of its own"
