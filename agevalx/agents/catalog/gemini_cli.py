"""Gemini CLI (`@google/gemini-cli`) in its ACP mode (`--acp`), speaking the Gemini API.

ageval writes `~/.gemini/settings.json` before each invocation: API-key authentication
(`gemini-api-key`), the model, no usage statistics, no telemetry, no update checks, and the
plain (non-pty) shell so that a command's output reaches its ACP `tool_call_update`, and no
directory tree in the first request: Gemini CLI lists the working directory there, and for a
task working in `/` that is `/proc` with its process ids, which differ from run to run, so
that no replay of the model traffic would match (the agent lists folders with its tools
instead). The key
(the gateway's token) goes only into `GEMINI_API_KEY`, by name; the endpoint into
`GOOGLE_GEMINI_BASE_URL`, which Gemini CLI's Gemini client honours for API-key auth.

Gemini CLI runs its tools itself (`run_shell_command`, `write_file`, `replace`, ...) and
reports them as ACP tool calls; with the client's `fs` capability it reads and writes files
through the client. `--approval-mode yolo` approves every tool call (an attempt has no one
to ask); `GEMINI_CLI_TRUST_WORKSPACE` trusts the task's folder, as a user's own project is;
`GEMINI_CLI_NO_RELAUNCH` keeps it to one process (it re-executes itself otherwise, only to
raise Node's heap limit).
"""

from __future__ import annotations

import json
import posixpath
from typing import Any

from agevalx.agents.bundlespec import BundleSpec
from agevalx.agents.catalog.base import AgentConfig, AgentDef, AgentSetup

NO_KEY = "ageval-no-key"
"""The key Gemini CLI gets when the profile has none (it refuses to start without one)."""

BUNDLE = BundleSpec(
    name="gemini-cli",
    packages=(("@google/gemini-cli", "0.61.0"),),
    node="22.23.5",
    entry="node_modules/@google/gemini-cli/bundle/gemini.js",
    arguments=("--acp", "--approval-mode", "yolo"),
    environment=(
        ("GEMINI_CLI_NO_RELAUNCH", "true"),
        ("GEMINI_CLI_TRUST_WORKSPACE", "true"),
    ),
    prune=("node_modules/node-linux-*/include", "node_modules/node-linux-*/share", "**/*.map"),
)


def settings(model: str) -> dict[str, Any]:
    """Gemini CLI's user settings for `model`."""
    return {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "model": {"name": model},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "tools": {"shell": {"enableInteractiveShell": False}},
        "context": {"includeDirectoryTree": False},
    }


def configure(setup: AgentSetup) -> AgentConfig:
    path = posixpath.join(setup.home, ".gemini", "settings.json")
    env = {"GOOGLE_GEMINI_BASE_URL": setup.base_url}
    if not setup.has_key:
        env["GEMINI_API_KEY"] = NO_KEY
    return AgentConfig(
        files={path: json.dumps(settings(setup.model), indent=2, sort_keys=True) + "\n"},
        env=env,
        key_variables=("GEMINI_API_KEY",) if setup.has_key else (),
    )


AGENT = AgentDef(
    name="gemini-cli",
    bundle=BUNDLE,
    providers=("gemini",),
    configure=configure,
    summary="Gemini CLI in ACP mode; runs its own shell and file tools",
    records="ACP tool calls: commands with their output (no exit code), file edits as diffs",
)
