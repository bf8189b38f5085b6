"""codex's configuration: what ageval writes into `~/.codex` for an invocation."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from agevalx.agents.base import AgentError
from agevalx.agents.bundles import launch_command
from agevalx.agents.catalog import codex
from agevalx.agents.catalog.base import PROVIDERS, AgentSetup

pytestmark = pytest.mark.unit

HOME = "/attempt/home"


def _setup(profile: dict[str, Any] | None = None, *, has_key: bool = True) -> AgentSetup:
    return AgentSetup(
        model="gpt-5.4-mini",
        provider=PROVIDERS["openai"],
        api="openai-responses",
        base_url='http://host.docker.internal:4242/v1?q="x"',
        has_key=has_key,
        home=HOME,
        workdir="/attempt/workspace",
        root="/opt/ageval/agents/codex",
        profile=profile or {},
    )


def _config(setup: AgentSetup) -> dict[str, Any]:
    text = codex.configure(setup).files[f"{HOME}/.codex/config.toml"]
    return tomllib.loads(text)


def test_codex_talks_responses_to_the_gateway_reading_the_key_from_a_variable() -> None:
    config = _config(_setup())
    assert config["model"] == "gpt-5.4-mini"
    assert config["model_provider"] == "ageval"
    assert config["model_providers"]["ageval"] == {
        "name": "ageval",
        "base_url": 'http://host.docker.internal:4242/v1?q="x"',
        "wire_api": "responses",
        "env_key": "AGEVAL_API_KEY",
    }
    assert (config["approval_policy"], config["sandbox_mode"]) == ("never", "danger-full-access")
    assert config["web_search"] == "disabled"
    assert config["analytics"] == {"enabled": False} and config["feedback"] == {"enabled": False}
    assert config["features"] == {"shell_snapshot": False}
    assert "model_reasoning_effort" not in config


def test_the_installation_id_is_fixed_and_codex_home_is_under_home() -> None:
    first, second = codex.configure(_setup()), codex.configure(_setup())
    assert first == second
    assert first.files[f"{HOME}/.codex/installation_id"] == codex.INSTALLATION_ID + "\n"
    assert first.env == {"CODEX_HOME": f"{HOME}/.codex"}
    assert first.key_variables == () and first.args == ()


def test_without_a_key_codex_names_no_key_variable() -> None:
    assert "env_key" not in _config(_setup(has_key=False))["model_providers"]["ageval"]


def test_reasoning_effort_is_passed_and_an_unknown_one_refused() -> None:
    config = _config(_setup({"model": {"reasoning": {"effort": "high"}}}))
    assert config["model_reasoning_effort"] == "high"
    with pytest.raises(AgentError) as refused:
        codex.configure(_setup({"model": {"reasoning": {"effort": "max"}}}))
    assert refused.value.code == "agent_options_invalid"


def test_the_native_binary_is_the_command_with_no_node() -> None:
    argv, environment = launch_command(codex.BUNDLE, "/opt/ageval/agents/codex")
    assert argv == [
        "/opt/ageval/agents/codex/node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp"
    ]
    assert environment == {}
    assert codex.AGENT.api(PROVIDERS["openai"]) == "openai-responses"
