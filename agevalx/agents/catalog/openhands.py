"""OpenHands (PyPI `openhands`, the OpenHands CLI) through its own ACP server: `openhands acp`.

The CLI and its SDK (`openhands-sdk`, `openhands-tools`) run on a CPython of the bundle's
own (`agevalx.agents.pythonbundles`). OpenHands 1.16 declares `Requires-Python ==3.12.*`;
no Debian release ships CPython 3.12 (bookworm has 3.11, trixie 3.13) and no registry
reachable here carries another relocatable build, so the bundle carries trixie's CPython 3.13
and installs the wheels with `--ignore-requires-python` (every binary dependency has cp313
wheels; OpenHands' code runs unchanged on 3.13).

`openhands acp` reads its agent from `~/.openhands/agent_settings.json` and ignores the LLM_*
variables, so ageval writes that file before each invocation: the model as LiteLLM names it
(`openai/<model>`, OpenAI-compatible, or `anthropic/<model>`) and the gateway as `base_url`,
with no `api_key`: LiteLLM then reads the provider's usual variable (`OPENAI_API_KEY`,
`ANTHROPIC_API_KEY`), which receives the key by name only. `--always-approve` runs the agent's
actions without asking (ageval's client would allow them anyway).

OpenHands runs commands with its own `terminal` tool and edits files with `file_editor`
(never the client's `terminal/*` or `fs/*`); ACP tool calls report them. Nothing phones
home: the banner and LiteLLM's remote price list are off.
"""

from __future__ import annotations

import json
import posixpath
from typing import Any

from agevalx.agents.bundlespec import BundleSpec
from agevalx.agents.catalog.base import AgentConfig, AgentDef, AgentSetup

VERSION = "1.16.0"

LAUNCHER = "openhands.py"
LAUNCHER_SOURCE = (
    "# Written by ageval: the `openhands` console script, run by the bundle's CPython.\n"
    "import sys\n"
    "from openhands_cli.entrypoint import main\n"
    "sys.argv[0] = 'openhands'\n"
    "sys.exit(main())\n"
)

KEY_VARIABLES = {"anthropic": "ANTHROPIC_API_KEY"}
"""The variable LiteLLM reads the key from, per provider (the others: `OPENAI_API_KEY`)."""

BUNDLE = BundleSpec(
    name="openhands",
    kind="python",
    packages=(("openhands", VERSION),),
    node="",
    runtime="3.13.5",
    pip_options=("--ignore-requires-python",),
    interpreter="python/bin/python3",
    entry=LAUNCHER,
    arguments=("acp", "--always-approve"),
    files=((LAUNCHER, LAUNCHER_SOURCE),),
    environment=(
        ("OPENHANDS_SUPPRESS_BANNER", "1"),
        ("LITELLM_LOCAL_MODEL_COST_MAP", "True"),
        ("LITELLM_LOG", "ERROR"),
        ("HF_HUB_OFFLINE", "1"),
        ("DO_NOT_TRACK", "1"),
    ),
)


def agent_settings(setup: AgentSetup) -> dict[str, Any]:
    """`~/.openhands/agent_settings.json`: the model and the gateway; never the key."""
    prefix = "anthropic" if setup.provider.name == "anthropic" else "openai"
    llm: dict[str, Any] = {
        "model": f"{prefix}/{setup.model}",
        "base_url": setup.base_url,
        "usage_id": "agent",
    }
    if setup.effort:
        llm["reasoning_effort"] = setup.effort
    return {"kind": "Agent", "llm": llm}


def configure(setup: AgentSetup) -> AgentConfig:
    directory = posixpath.join(setup.home, ".openhands")
    settings = json.dumps(agent_settings(setup), indent=2, sort_keys=True) + "\n"
    return AgentConfig(
        files={posixpath.join(directory, "agent_settings.json"): settings},
        env={"OPENHANDS_PERSISTENCE_DIR": directory},
        key_variables=(KEY_VARIABLES.get(setup.provider.name, "OPENAI_API_KEY"),),
    )


AGENT = AgentDef(
    name="openhands",
    bundle=BUNDLE,
    providers=("openai", "anthropic", "openrouter", "deepseek"),
    configure=configure,
    summary="OpenHands CLI through `openhands acp`; runs its own terminal and file_editor tools",
    records="ACP tool calls (kind execute for its terminal tool) with their output",
    stop="term",
)
