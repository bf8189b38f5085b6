"""mini-swe-agent (PyPI `mini-swe-agent`), driven through ageval's own ACP adapter.

mini-swe-agent has no ACP mode. Its bundle is Debian's CPython with the agent's wheels
(`agevalx.agents.pythonbundles`) plus the adapter `agevalx.agents.minisweagent_acp`, shipped
as source: the adapter runs mini-swe-agent's own loop (`DefaultAgent`, its text-based
LiteLLM model and `mini_textbased.yaml` templates) and runs each command through the ACP
client's terminals, so ageval records every command as a terminal action.

The model goes to LiteLLM as `<provider>/<model>` with the gateway's URL as `api_base`; the
key (the gateway's token) only reaches the provider's usual variable (`OPENAI_API_KEY`, ...),
which LiteLLM reads, by name. No cost-map download, no startup banner, no cost tracking (the
gateway counts tokens and cost).
"""

from __future__ import annotations

from pathlib import Path

from agevalx.agents import minisweagent_acp
from agevalx.agents.bundlespec import BundleSpec
from agevalx.agents.catalog.base import AgentConfig, AgentDef, AgentSetup
from agevalx.agents.pythonbundles import LAUNCHER

NO_KEY = "ageval-no-key"
"""The key LiteLLM gets when the profile has none (local servers ignore it)."""

ADAPTER = "adapter/minisweagent_acp.py"
"""The adapter's source in the bundle."""

BUNDLE = BundleSpec(
    name="mini-swe-agent",
    kind="python",
    packages=(("mini-swe-agent", "2.4.6"),),
    node="",
    runtime="3.11.2",
    interpreter=LAUNCHER,
    entry=ADAPTER,
    files=((ADAPTER, Path(minisweagent_acp.__file__).read_text(encoding="utf-8")),),
    environment=(
        ("MSWEA_SILENT_STARTUP", "1"),
        ("MSWEA_COST_TRACKING", "ignore_errors"),
        ("LITELLM_LOCAL_MODEL_COST_MAP", "True"),
    ),
)


def configure(setup: AgentSetup) -> AgentConfig:
    key = setup.provider.key_variable
    env = {
        minisweagent_acp.MODEL_VARIABLE: f"{setup.provider.name}/{setup.model}",
        minisweagent_acp.BASE_URL_VARIABLE: setup.base_url,
    }
    if not setup.has_key:
        env[key] = NO_KEY
    return AgentConfig(env=env, key_variables=(key,) if setup.has_key else ())


AGENT = AgentDef(
    name="mini-swe-agent",
    bundle=BUNDLE,
    providers=("openai", "openrouter", "deepseek"),
    configure=configure,
    summary="mini-swe-agent's own loop (one bash command per reply) through ageval's ACP adapter",
    records="terminal/* actions: every command with its output and exit code",
)
