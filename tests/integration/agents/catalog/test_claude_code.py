"""claude-code, bound by name (`--agent claude-code --model anthropic/...`), end to end on both
task formats, against the mock model's Anthropic messages API."""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import threading
import time
import uuid
from typing import Any

import pytest
import yaml

from agevalx.agents import bundles, catalog
from agevalx.agents.acp.bundled import HOST_ALIAS
from agevalx.agents.acp.executor import AcpExecutor
from agevalx.agents.base import Container, Invocation
from agevalx.agents.catalog.base import AgentConfig, AgentSetup
from agevalx.agents.mockllm import MockLLM, bridge_gateway
from tests.integration.agents.catalog.harness import (
    PROBE_FILE,
    SCRIPTS,
    Attempt,
    _docker,
    ensure_built,
)
from tests.integration.conftest import committed_image

MODEL = "claude-sonnet-4-5"


def _check_claude_code(attempt: Attempt) -> None:
    """Claude Code got the token in its own variable, wrote it nowhere, asked for the model
    it was given, counted its tools' tokens, and ran its command in an ACP terminal."""
    run_key = next(n["key"] for n in attempt.result["nodes"] if n["kind"] == "run")
    image = committed_image(run_key)
    probe = _docker("run", "--rm", image, "cat", PROBE_FILE).stdout
    assert "ANTHROPIC_API_KEY=ageval-gw-" in probe
    assert f"ANTHROPIC_MODEL={MODEL}" in probe
    assert "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1" in probe
    written = _docker(
        "run",
        "--rm",
        image,
        "grep",
        "-rlsF",
        "ageval-gw-",
        "/",
        "--exclude-dir=proc",
        "--exclude-dir=sys",
        "--exclude-dir=dev",
        "--exclude=ageval-probe.txt",
        check=False,
    )
    assert written.stdout == "", "the gateway token was written into a file"
    traffic = attempt.traffic()
    assert traffic[0]["path"] == "/v1/messages/count_tokens"
    turns = [t for t in traffic if t["path"] == "/v1/messages"]
    assert len(turns) == attempt.requests == 3
    assert all(t["streamed"] and t["request"]["model"] == MODEL for t in turns)
    tools = {tool["name"] for tool in turns[0]["request"]["tools"]}
    assert {"mcp__acp__Bash", "mcp__acp__Read"} <= tools and "Bash" not in tools
    activity = attempt.directory / "activity.jsonl"
    assert '"terminal/create"' in activity.read_text() and '"fs_read"' in activity.read_text()


@pytest.mark.integration
@pytest.mark.slow
def test_claude_code_solves_harbor_hello_and_an_ageval_task_by_name(harness_for: Any) -> None:
    harness = harness_for("claude-code", f"anthropic/{MODEL}")
    for attempt in (harness.harbor_hello(), harness.ageval_task()):
        harness.check_all(attempt)
        _check_claude_code(attempt)


class _RefusingProxy:
    """An HTTP proxy on the bridge gateway that refuses every request and notes its target."""

    def __init__(self) -> None:
        self.targets: list[str] = []
        self._socket = socket.socket()
        self._socket.bind((bridge_gateway(), 0))
        self._socket.listen(16)
        self.port = int(self._socket.getsockname()[1])
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = self._socket.accept()
                with connection:
                    self.targets.append(connection.recv(4096).split(b"\r\n")[0].decode())
                    connection.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")

    def close(self) -> None:
        self._socket.close()


@pytest.mark.integration
@pytest.mark.slow
def test_claude_code_contacts_nothing_but_its_base_url(
    docker_engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole hello session with HTTP(S)_PROXY pointing at a proxy that notes every target:
    Claude Code asks the mock model (exempt by NO_PROXY) and nothing else."""
    bundle = ensure_built("claude-code")
    proxy = _RefusingProxy()
    agent = catalog.agent("claude-code")
    assert agent is not None

    def proxied(setup: AgentSetup) -> AgentConfig:
        config = agent.configure(setup)
        address = f"http://{HOST_ALIAS}:{proxy.port}"
        fenced = {"HTTPS_PROXY": address, "HTTP_PROXY": address, "NO_PROXY": HOST_ALIAS}
        return dataclasses.replace(config, env={**config.env, **fenced})

    monkeypatch.setitem(
        catalog.agents(), "claude-code", dataclasses.replace(agent, configure=proxied)
    )
    container = docker_engine.containers.run(
        "ageval/base:bookworm",
        ["sleep", "600"],
        detach=True,
        init=True,
        name=f"ageval-test-claude-code-{uuid.uuid4().hex[:8]}",
        extra_hosts={HOST_ALIAS: "host-gateway"},
        volumes={str(bundle.path): {"bind": bundles.mount_point("claude-code"), "mode": "ro"}},
    )
    script = yaml.safe_load((SCRIPTS / "hello-claude-code.yaml").read_text())
    try:
        container.exec_run(["mkdir", "-p", "/attempt/workspace", "/attempt/home"])
        with MockLLM(script, host=bridge_gateway()) as server:
            base_url = f"http://{HOST_ALIAS}:{server.port}"
            profile = {
                "executor": "acp",
                "base_url": base_url,
                "model": {"id": MODEL},
                "options": {"entry": "claude-code", "provider": "anthropic"},
            }
            invocation = Invocation(
                role="solver",
                prompt="Write 42 to /tmp/answer.txt.",
                profile=profile,
                container=Container(id=container.id),
                deadline=time.monotonic() + 180,
                record=lambda action: None,
                transcript=lambda entry: None,
                environ={"AGEVAL_API_KEY": "sk-test", "AGEVAL_BASE_URL": base_url},
            )
            result = AcpExecutor().invoke(invocation)
            assert result.output == "I wrote 42 to /tmp/answer.txt.", result
            assert server.remaining == 0
        assert container.exec_run(["cat", "/tmp/answer.txt"]).output == b"42\n"
    finally:
        container.remove(force=True)
        proxy.close()
    assert proxy.targets == [], f"Claude Code reached out: {proxy.targets}"
