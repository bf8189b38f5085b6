"""Qwen Code (`@qwen-code/qwen-code`, a Gemini CLI fork) in its ACP mode (`--acp`), speaking
OpenAI chat completions.

ageval writes `~/.qwen/settings.json` before each invocation: OpenAI-compatible
authentication (`openai`), the model, YOLO approvals (an attempt has no one to ask; the
default AUTO mode asks the model to classify each command, one model request more per tool
call), and no side requests to the model: no managed auto-memory extraction or "dream", no
follow-up suggestions, no tool-use summaries. Usage statistics, telemetry and update checks
are off. The key (the gateway's token) goes only into `OPENAI_API_KEY`, by name; the endpoint
and model into `OPENAI_BASE_URL` and `OPENAI_MODEL`.

The entry is the package's `cli.js`, not its `cli-entry.js` launcher, which would look for
self-installed updates under `~/.qwen/updates` and re-execute Node; `QWEN_CODE_NO_RELAUNCH`
keeps the CLI itself from re-executing too. Qwen Code runs its tools itself
(`run_shell_command`, `write_file`, `edit`, ...) and reports them as ACP tool calls.
"""

from __future__ import annotations

import json
import posixpath
from typing import Any

from agevalx.agents.bundlespec import BundleSpec
from agevalx.agents.catalog.base import AgentConfig, AgentDef, AgentSetup

NO_KEY = "ageval-no-key"
"""The key Qwen Code gets when the profile has none (it refuses to start without one)."""

PACKAGE = "node_modules/@qwen-code/qwen-code"

BUNDLE = BundleSpec(
    name="qwen-code",
    packages=(("@qwen-code/qwen-code", "0.24.4"),),
    node="22.23.5",
    entry=f"{PACKAGE}/cli.js",
    arguments=("--acp",),
    environment=(("QWEN_CODE_NO_RELAUNCH", "true"),),
    prune=(
        "node_modules/node-linux-*/include",
        "node_modules/node-linux-*/share",
        "**/*.map",
        f"{PACKAGE}/vendor/ripgrep/*-darwin",
        f"{PACKAGE}/vendor/ripgrep/*-win32",
    ),
)


def settings(model: str) -> dict[str, Any]:
    """Qwen Code's user settings for `model`."""
    return {
        "security": {"auth": {"selectedType": "openai"}},
        "model": {"name": model},
        "tools": {"approvalMode": "yolo"},
        "memory": {"enableManagedAutoMemory": False, "enableManagedAutoDream": False},
        "ui": {"enableFollowupSuggestions": False, "enableUserFeedback": False},
        "experimental": {"emitToolUseSummaries": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False},
    }


def configure(setup: AgentSetup) -> AgentConfig:
    path = posixpath.join(setup.home, ".qwen", "settings.json")
    env = {"OPENAI_BASE_URL": setup.base_url, "OPENAI_MODEL": setup.model}
    if not setup.has_key:
        env["OPENAI_API_KEY"] = NO_KEY
    return AgentConfig(
        files={path: json.dumps(settings(setup.model), indent=2, sort_keys=True) + "\n"},
        env=env,
        key_variables=("OPENAI_API_KEY",) if setup.has_key else (),
    )


AGENT = AgentDef(
    name="qwen-code",
    bundle=BUNDLE,
    providers=("openai", "openrouter", "deepseek"),
    configure=configure,
    summary="Qwen Code in ACP mode (OpenAI-compatible); runs its own shell and file tools",
    records="ACP tool calls: commands with their output (the exit code only in its text)",
)
