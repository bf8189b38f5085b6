"""`--agent harbor:NAME`: names, refusals, the bound profile, the run key, the runner's channel.

The installed harbor is replaced by what its `describe` would answer (`HarborInfo`); the
integration test (tests/integration/harbor/test_harbor_agent.py) asks the real one.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from agevalx.agents import bundles
from agevalx.agents.debianbundles import build_debian
from agevalx.agents.implementations import implementation
from agevalx.config.profiles import AgentProfile
from agevalx.errors import AgevalError, UsageError
from agevalx.formats.harbor import agent_runner, agentexec, agents

pytestmark = pytest.mark.unit

NAMES = ("aider", "claude-code", "computer-1", "nop", "oracle", "pi", "terminus-2")


def info(name: str, *, installed: bool = False, version: str = "0.26.0") -> agents.HarborInfo:
    known = name in NAMES
    agent = {"name": name, "registered": True, "installed": installed} if known else None
    return agents.HarborInfo(python="/py", version=version, names=NAMES, agent=agent)


@pytest.fixture
def harbor(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The installed harbor as a table: name -> installed; `version` is its version."""
    table: dict[str, Any] = {"claude-code": True, "aider": True, "version": "0.26.0"}
    monkeypatch.setattr(agents, "harbor_python", lambda environ=None: "/py")

    def describe(python: str, name: str) -> agents.HarborInfo:
        return info(name, installed=bool(table.get(name)), version=table["version"])

    monkeypatch.setattr(agents, "describe", describe)
    return table


def test_harbor_names_are_recognised_and_parsed() -> None:
    assert agents.is_harbor_agent("harbor:terminus-2")
    assert not agents.is_harbor_agent("terminus-2") and not agents.is_harbor_agent(None)
    assert agents.agent_name("harbor:terminus-2") == "terminus-2"
    for empty in ("harbor:", "harbor:  "):
        with pytest.raises(UsageError) as caught:
            agents.agent_name(empty)
        assert caught.value.code == agents.UNKNOWN and caught.value.field == "--agent"


def test_an_unknown_name_lists_harbors_own_names() -> None:
    with pytest.raises(UsageError) as caught:
        agents.runnable("terminus-3", info("terminus-3"))
    assert caught.value.code == agents.UNKNOWN
    assert "aider, claude-code, computer-1, nop, oracle, pi, terminus-2" in str(caught.value.hint)


def test_an_agent_harbor_installs_over_the_network_is_refused_with_ours_named() -> None:
    with pytest.raises(UsageError) as caught:
        agents.runnable("pi", info("pi", installed=True))
    assert caught.value.code == agents.NEEDS_NETWORK
    assert "over the network" in caught.value.message
    assert "--agent pi" in str(caught.value.hint)  # ageval's own bundle of it
    with pytest.raises(UsageError) as caught:
        agents.runnable("aider", info("aider", installed=True))
    assert caught.value.code == agents.NEEDS_NETWORK
    assert "--agent aider" not in str(caught.value.hint)


def test_host_side_agents_ageval_does_not_run_say_why() -> None:
    for name, said in (("oracle", "--agent oracle"), ("computer-1", "desktop")):
        with pytest.raises(UsageError) as caught:
            agents.runnable(name, info(name))
        assert caught.value.code == agents.UNSUPPORTED and said in caught.value.message


def test_a_name_harbor_has_no_class_for_is_refused() -> None:
    bare = agents.HarborInfo("/py", "0.26.0", NAMES, {"name": "terminus", "registered": False})
    with pytest.raises(UsageError) as caught:
        agents.runnable("terminus", bare)
    assert caught.value.code == agents.UNSUPPORTED and "no agent class" in caught.value.message


def test_terminus_2_runs_with_the_tmux_bundle_and_no_terminal_recording() -> None:
    agent = agents.runnable("terminus-2", info("terminus-2"))
    assert agent.bundles == (agents.TMUX,) and agent.model
    assert agent.kwargs == {"record_terminal_session": False}
    profile = {"executor": "harbor", "options": {"entry": "terminus-2"}}
    assert agents.tool_bundles(profile) == (agents.TMUX,)
    assert bundles._profile_bundles(profile) == (agents.TMUX,)
    assert bundles.bundle_spec(agents.TMUX.name) == agents.TMUX
    assert agents.tool_bundles({"executor": "harbor", "options": {"entry": "nop"}}) == ()


def test_the_bound_profile_reads_the_provider_variables(
    harbor: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:8000/v1")
    profile, model = agents.harbor_profile("harbor:terminus-2", "openai/gpt-5.4-mini")
    assert model == "gpt-5.4-mini"
    assert profile.executor == "harbor" and profile.display_label() == "harbor:terminus-2"
    assert profile.api_key == "${OPENAI_API_KEY}"
    assert profile.base_url == "http://localhost:8000/v1"
    assert profile.options.entry == "terminus-2"
    assert profile.model_dump()["options"]["provider"] == "openai"
    profile, model = agents.harbor_profile("harbor:terminus-2", "my-model")
    assert (profile.api_key, model) == ("${OPENAI_API_KEY}", "my-model")
    profile, model = agents.harbor_profile("harbor:nop", None)
    assert profile.api_key is None and profile.base_url is None and model is None


def test_terminus_2_needs_a_model_the_gateway_can_relay(harbor: dict[str, Any]) -> None:
    with pytest.raises(UsageError) as caught:
        agents.harbor_profile("harbor:terminus-2", None)
    assert caught.value.code == "model_required"
    with pytest.raises(UsageError) as caught:
        agents.harbor_profile("harbor:terminus-2", "anthropic/claude-x")
    assert caught.value.code == "agent_provider_unsupported"
    with pytest.raises(UsageError) as caught:
        agents.harbor_profile("harbor:claude-code", "openai/m")
    assert caught.value.code == agents.NEEDS_NETWORK


def test_the_run_key_holds_harbors_version_the_agent_and_the_runner(
    harbor: dict[str, Any],
) -> None:
    first = implementation("harbor", "terminus-2")
    assert first is not None
    assert first["harbor"] == "0.26.0" and first["agent"] == "terminus-2"
    assert set(first) == {"harbor", "agent", "runner", "bundles"}
    harbor["version"] = "0.27.0"
    assert implementation("harbor", "terminus-2") != first
    assert implementation("harbor", "nop")["bundles"] != first["bundles"]  # type: ignore[index]


def test_a_harbor_profile_needs_the_agents_name() -> None:
    with pytest.raises(Exception, match="harbor_missing_entry"):
        AgentProfile.model_validate({"executor": "harbor"})


def test_harbors_python_comes_from_the_variable_or_the_harbor_program(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(AgevalError) as caught:
        agents.harbor_python({agents.PYTHON_ENV: str(tmp_path / "missing")})
    assert caught.value.code == agents.NOT_INSTALLED
    python = tmp_path / "venv" / "python"
    python.parent.mkdir()
    python.write_text("")
    assert agents.harbor_python({agents.PYTHON_ENV: str(python)}) == str(python)
    program = tmp_path / "bin" / "harbor"
    program.parent.mkdir()
    program.write_text(f"#!{python}\nimport harbor\n")
    program.chmod(0o755)
    monkeypatch.setattr(agents, "find_spec", lambda name: None)
    assert agents.harbor_python({"PATH": str(program.parent)}) == str(python)
    with pytest.raises(AgevalError) as caught:
        agents.harbor_python({"PATH": str(tmp_path / "nowhere")})
    assert caught.value.code == agents.NOT_INSTALLED and agents.PYTHON_ENV in str(caught.value.hint)


def test_the_runner_inherits_no_model_key_of_agevals_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-real")
    environment = agents.runner_environment({"OPENAI_API_KEY": "ageval-gw-token"})
    assert environment["OPENAI_API_KEY"] == "ageval-gw-token"
    assert "ANTHROPIC_API_KEY" not in environment
    assert environment["HARBOR_TELEMETRY"] == "0"
    assert environment["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert environment["PATH"] == os.environ["PATH"]


def test_the_gateway_is_reached_from_the_host_at_its_own_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import agevalx.gateway.server as server

    monkeypatch.setattr(server, "gateway_host", lambda: "172.17.0.1")
    url = "http://host.docker.internal:4321/v1"
    assert agentexec.host_url(url) == "http://172.17.0.1:4321/v1"
    assert agentexec.host_url("http://localhost:8000/v1") == "http://localhost:8000/v1"


def test_the_runner_channel_sends_one_request_and_raises_the_answered_error() -> None:
    requests = io.StringIO()
    answers = io.StringIO(
        json.dumps({"ok": True, "result": {"output": "hi\n", "exit_code": 0}})
        + "\n"
        + json.dumps({"ok": False, "error": {"type": "TimeoutError", "message": "late"}})
        + "\n"
    )
    channel = agent_runner.Channel(requests, answers)

    async def talk() -> Any:
        first = await channel.call("exec", command="echo hi")
        with pytest.raises(TimeoutError, match="late"):
            await channel.call("exec", command="sleep 9")
        with pytest.raises(ConnectionError):
            await channel.call("exec", command="more")
        return first

    assert asyncio.run(talk()) == {"output": "hi\n", "exit_code": 0}
    sent = [json.loads(line) for line in requests.getvalue().splitlines()]
    assert sent[0] == {"op": "exec", "command": "echo hi"} and len(sent) == 3


def test_the_debian_builder_refuses_another_machines_platform(tmp_path: Path) -> None:
    with pytest.raises(bundles.BundleError) as caught:
        build_debian(agents.TMUX, tmp_path, "linux-s390x")
    assert caught.value.code == "bundle_platform_unsupported"


def test_a_profiles_files_harbor_agent_is_refused_naming_its_field(harbor: dict[str, Any]) -> None:
    harbor["pi"] = True
    with pytest.raises(UsageError) as caught:
        implementation("harbor", "pi")
    assert caught.value.code == agents.NEEDS_NETWORK and caught.value.field == "options.entry"


def test_the_task_cannot_hand_a_model_key_to_a_harbor_agent() -> None:
    environ = {
        "AGEVAL_API_KEY": "ageval-gw-token",
        "AGEVAL_BASE_URL": "http://host.docker.internal:1/v1",
        "OPENAI_API_KEY": "sk-real",
        "OPENAI_API_BASE": "https://example.invalid",
        "ANTHROPIC_API_KEY": "sk-real",
        "DATA_DIR": "/data",
    }
    assert agentexec.agent_environment(environ) == {"DATA_DIR": "/data"}
