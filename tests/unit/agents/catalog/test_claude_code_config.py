"""claude-code's configuration: variables only, the key by name, the model everywhere."""

from __future__ import annotations

from typing import Any

import pytest

from agevalx.agents import catalog
from agevalx.agents.base import AgentError
from agevalx.agents.catalog.base import PROVIDERS, AgentSetup
from agevalx.agents.catalog.claude_code import AGENT, MODEL_VARIABLES, NO_KEY

GATEWAY = "http://host.docker.internal:41234"


def _setup(*, has_key: bool = True, profile: dict[str, Any] | None = None) -> AgentSetup:
    return AgentSetup(
        model="claude-sonnet-4-5",
        provider=PROVIDERS["anthropic"],
        api="anthropic-messages",
        base_url=GATEWAY,
        has_key=has_key,
        home="/attempt/home",
        workdir="/attempt/workspace",
        root="/opt/ageval/agents/claude-code",
        profile=profile or {},
    )


@pytest.mark.unit
def test_claude_code_is_in_the_catalog_speaking_anthropic_messages() -> None:
    assert catalog.agent("claude-code") is AGENT
    assert AGENT.providers == ("anthropic",)
    assert AGENT.api(PROVIDERS["anthropic"]) == "anthropic-messages"
    assert all(version.count(".") == 2 for _, version in AGENT.bundle.packages), "exact pins"
    fixed = dict(AGENT.bundle.environment)
    assert fixed["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert fixed["DISABLE_TELEMETRY"] == fixed["DISABLE_AUTOUPDATER"] == "1"
    assert fixed["CLAUDE_CODE_DISABLE_FAST_MODE"] == "1", "else it asks api.anthropic.com"


@pytest.mark.unit
def test_the_key_goes_only_into_a_variable_and_the_model_into_every_alias() -> None:
    config = AGENT.configure(_setup())
    assert config.files == {} and config.args == ()
    assert config.key_variables == ("ANTHROPIC_API_KEY",)
    assert "ANTHROPIC_API_KEY" not in config.env
    assert config.env["ANTHROPIC_BASE_URL"] == GATEWAY
    assert {name: config.env[name] for name in MODEL_VARIABLES} == dict.fromkeys(
        MODEL_VARIABLES, "claude-sonnet-4-5"
    )
    assert "MAX_THINKING_TOKENS" not in config.env


@pytest.mark.unit
def test_without_a_key_claude_code_gets_a_placeholder() -> None:
    config = AGENT.configure(_setup(has_key=False))
    assert config.key_variables == ()
    assert config.env["ANTHROPIC_API_KEY"] == NO_KEY


@pytest.mark.unit
def test_reasoning_effort_sets_the_thinking_budget() -> None:
    def budget(effort: str) -> str:
        profile = {"model": {"reasoning": {"effort": effort}}}
        return AGENT.configure(_setup(profile=profile)).env["MAX_THINKING_TOKENS"]

    assert [budget(e) for e in ("none", "low", "medium", "high")] == [
        "0",
        "4000",
        "10000",
        "31999",
    ]
    with pytest.raises(AgentError) as raised:
        budget("xhigh")
    assert raised.value.code == "agent_options_invalid" and "xhigh" in raised.value.message
