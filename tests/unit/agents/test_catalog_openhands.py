"""OpenHands' configuration: its agent_settings.json names the model and the gateway, never
the key, which LiteLLM reads from the provider's variable."""

from __future__ import annotations

import json

import pytest

from agevalx.agents.bundles import launch_command
from agevalx.agents.catalog import agent, openhands
from agevalx.agents.catalog.base import PROVIDERS, AgentSetup

pytestmark = pytest.mark.unit

HOME = "/attempt/home"


def _setup(provider: str = "openai") -> AgentSetup:
    return AgentSetup(
        model="gpt-5.4-mini",
        provider=PROVIDERS[provider],
        api=PROVIDERS[provider].api,
        base_url="http://host.docker.internal:4242/v1",
        has_key=True,
        home=HOME,
        workdir="/attempt/workspace",
        root="/opt/ageval/agents/openhands",
        profile={"model": {"reasoning": {"effort": "low"}}},
    )


def test_openhands_settings_name_model_and_gateway_and_no_key() -> None:
    config = openhands.configure(_setup())
    settings = json.loads(config.files[f"{HOME}/.openhands/agent_settings.json"])
    assert settings == {
        "kind": "Agent",
        "llm": {
            "model": "openai/gpt-5.4-mini",
            "base_url": "http://host.docker.internal:4242/v1",
            "usage_id": "agent",
            "reasoning_effort": "low",
        },
    }
    assert config.key_variables == ("OPENAI_API_KEY",)
    assert config.env == {"OPENHANDS_PERSISTENCE_DIR": f"{HOME}/.openhands"}


def test_openhands_talks_anthropic_through_litellms_anthropic_client() -> None:
    config = openhands.configure(_setup("anthropic"))
    settings = json.loads(config.files[f"{HOME}/.openhands/agent_settings.json"])
    assert settings["llm"]["model"] == "anthropic/gpt-5.4-mini"
    assert config.key_variables == ("ANTHROPIC_API_KEY",)


def test_openhands_starts_its_acp_server_with_the_bundled_cpython() -> None:
    assert agent("openhands") is openhands.AGENT
    argv, env = launch_command(openhands.BUNDLE, "/opt/x")
    assert argv == [
        "/opt/x/python/bin/python3",
        "/opt/x/openhands.py",
        "acp",
        "--always-approve",
    ]
    assert env["OPENHANDS_SUPPRESS_BANNER"] == "1"
    assert env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert openhands.AGENT.version == openhands.VERSION
