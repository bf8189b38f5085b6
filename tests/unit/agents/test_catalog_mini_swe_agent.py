"""mini-swe-agent's bundle and configuration (the builder's parts: test_pythonbundles.py)."""

from __future__ import annotations

import pytest

from agevalx.agents.bundles import launch_command
from agevalx.agents.catalog.base import PROVIDERS, AgentSetup
from agevalx.agents.catalog.mini_swe_agent import AGENT, NO_KEY

pytestmark = pytest.mark.unit

ROOT = "/opt/ageval/agents/mini-swe-agent"


def _setup(*, has_key: bool = True) -> AgentSetup:
    return AgentSetup(
        model="gpt-5.4-mini",
        provider=PROVIDERS["openai"],
        api="openai-chat",
        base_url="http://host.docker.internal:41234/v1",
        has_key=has_key,
        home="/attempt/home",
        workdir="/attempt/workspace",
        root=ROOT,
        profile={},
    )


def test_the_key_reaches_only_litellms_variable_by_name() -> None:
    config = AGENT.configure(_setup())
    assert config.key_variables == ("OPENAI_API_KEY",)
    assert config.env == {
        "MSWEA_ACP_MODEL": "openai/gpt-5.4-mini",
        "MSWEA_ACP_BASE_URL": "http://host.docker.internal:41234/v1",
    }
    assert not config.files


def test_without_a_key_litellm_gets_a_placeholder() -> None:
    config = AGENT.configure(_setup(has_key=False))
    assert config.key_variables == ()
    assert config.env["OPENAI_API_KEY"] == NO_KEY


def test_the_bundle_runs_the_shipped_adapter_on_the_bundled_python_quietly() -> None:
    argv, env = launch_command(AGENT.bundle, ROOT)
    assert argv == [f"{ROOT}/python/bin/python3", f"{ROOT}/adapter/minisweagent_acp.py"]
    assert not any(name.startswith(("PYTHON", "LD_")) for name in env)  # nothing leaks
    assert env["MSWEA_SILENT_STARTUP"] == "1"
    assert env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    shipped = dict(AGENT.bundle.files)["adapter/minisweagent_acp.py"]
    assert "def run_mini_swe_agent" in shipped
    assert "from agevalx" not in shipped and "import agevalx" not in shipped
    assert AGENT.version == "2.4.6"
