"""The catalog's gemini-cli and qwen-code: what they are told when an invocation starts."""

from __future__ import annotations

import json

import pytest

from agevalx.agents import bundles, catalog
from agevalx.agents.catalog.base import PROVIDERS, AgentSetup

pytestmark = pytest.mark.unit


def _setup(provider: str, base_url: str, *, has_key: bool = True) -> AgentSetup:
    return AgentSetup(
        model="some-model",
        provider=PROVIDERS[provider],
        api=PROVIDERS[provider].api,
        base_url=base_url,
        has_key=has_key,
        home="/attempt/home",
        workdir="/app",
        root="/opt/ageval/agents/x",
        profile={},
    )


def test_gemini_cli_gets_the_gateway_by_variable_and_settings_that_stay_quiet() -> None:
    agent = catalog.agent("gemini-cli")
    assert agent is not None and agent.providers == ("gemini",)
    config = agent.configure(_setup("gemini", "http://host.docker.internal:4000"))
    (path, text) = next(iter(config.files.items()))
    assert path == "/attempt/home/.gemini/settings.json"
    settings = json.loads(text)
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert settings["model"]["name"] == "some-model"
    assert settings["privacy"]["usageStatisticsEnabled"] is False
    assert settings["telemetry"]["enabled"] is False
    assert settings["general"]["enableAutoUpdate"] is False
    assert settings["context"]["includeDirectoryTree"] is False
    assert config.env == {"GOOGLE_GEMINI_BASE_URL": "http://host.docker.internal:4000"}
    assert config.key_variables == ("GEMINI_API_KEY",)
    argv, environment = bundles.launch_command(agent.bundle, "/b")
    assert argv[:2] == ["/b/node", "/b/node_modules/@google/gemini-cli/bundle/gemini.js"]
    assert "--acp" in argv and argv[-2:] == ["--approval-mode", "yolo"]
    assert environment["GEMINI_CLI_NO_RELAUNCH"] == "true"


def test_qwen_code_gets_an_openai_endpoint_and_makes_no_side_requests() -> None:
    agent = catalog.agent("qwen-code")
    assert agent is not None and agent.providers[0] == "openai"
    config = agent.configure(_setup("openai", "http://host.docker.internal:4000/v1"))
    settings = json.loads(config.files["/attempt/home/.qwen/settings.json"])
    assert settings["security"]["auth"]["selectedType"] == "openai"
    assert settings["tools"]["approvalMode"] == "yolo"
    assert settings["memory"]["enableManagedAutoMemory"] is False
    assert settings["ui"]["enableFollowupSuggestions"] is False
    assert settings["experimental"]["emitToolUseSummaries"] is False
    assert config.env == {
        "OPENAI_BASE_URL": "http://host.docker.internal:4000/v1",
        "OPENAI_MODEL": "some-model",
    }
    assert config.key_variables == ("OPENAI_API_KEY",)
    argv, environment = bundles.launch_command(agent.bundle, "/b")
    assert argv == ["/b/node", "/b/node_modules/@qwen-code/qwen-code/cli.js", "--acp"]
    assert environment == {"QWEN_CODE_NO_RELAUNCH": "true"}


@pytest.mark.parametrize(
    ("name", "provider", "variable"),
    [
        ("gemini-cli", "gemini", "GEMINI_API_KEY"),
        ("qwen-code", "openai", "OPENAI_API_KEY"),
    ],
)
def test_without_a_key_the_agent_gets_a_placeholder(
    name: str, provider: str, variable: str
) -> None:
    agent = catalog.agent(name)
    assert agent is not None
    config = agent.configure(_setup(provider, "http://localhost:1", has_key=False))
    assert config.key_variables == ()
    assert config.env[variable] == "ageval-no-key"
