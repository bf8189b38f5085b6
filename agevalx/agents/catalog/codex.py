"""Codex through its ACP adapter `@zed-industries/codex-acp` (a native binary, run directly).

The npm package `@zed-industries/codex-acp` is a small Node launcher; the agent itself is the
Rust binary of its platform package (`@zed-industries/codex-acp-linux-x64`, an optional
dependency pinned to the same version). ageval runs that binary directly, with no Node in
between, so the bundle's Node is pruned. The binary is linked against glibc (>= 2.34),
OpenSSL 3 (`libssl.so.3`, `libcrypto.so.3`) and zlib: Debian bookworm, Ubuntu 22.04 and
later, and the python images built on them have them all.

Before each invocation ageval writes `~/.codex/config.toml`: one model provider, `ageval`,
with the endpoint, `wire_api = "responses"` and `env_key = "AGEVAL_API_KEY"` (codex reads the
key from that variable itself: it is never written); no approvals and no sandbox of codex's
own (`danger-full-access`: the attempt container is the sandbox, and codex's Landlock and
seccomp sandbox is not available in every container); no web search, analytics or feedback
upload; and no shell snapshots (codex would otherwise write its environment, the gateway
token included, into `~/.codex/shell_snapshots/`). It also writes `~/.codex/installation_id`,
a fixed id, which codex otherwise makes at random and sends in every request's body
(`client_metadata`).

Codex runs commands itself (its `exec_command` tool in a PTY, `apply_patch` for edits) and
reports each as an ACP tool call (kind `execute`) with `_meta.terminal_output` and
`_meta.terminal_exit`, since ageval's client advertises them.
"""

from __future__ import annotations

import json
import posixpath

from agevalx.agents.base import AgentError
from agevalx.agents.bundlespec import BundleSpec
from agevalx.agents.catalog.base import AgentConfig, AgentDef, AgentSetup

API_KEY_VARIABLE = "AGEVAL_API_KEY"
"""The variable codex reads the key (the gateway's token) from: its provider's `env_key`."""

PROVIDER_ID = "ageval"
"""The model provider ageval writes into codex's config.toml."""

INSTALLATION_ID = "a6e7a1a0-0000-4000-8000-000000000001"
"""What `~/.codex/installation_id` holds: codex sends it in every request body, so a random
one would make each attempt's requests differ (and `replay --model-traffic` diverge)."""

EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
"""Codex's `model_reasoning_effort` values."""

VERSION = "0.16.0"

BUNDLE = BundleSpec(
    name="codex",
    packages=(("@zed-industries/codex-acp", VERSION),),
    node="22.23.5",
    entry="node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp",
    interpreter="",
    prune=("node_modules/node-linux-*",),
)
"""The npm launcher and, through its exact optional dependency, the platform binary."""


def _toml(value: str | bool) -> str:
    """A TOML value: a boolean, or a basic string (JSON's escapes are TOML's)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, ensure_ascii=False)


def codex_config(setup: AgentSetup) -> str:
    """codex's `config.toml` for an invocation."""
    top: dict[str, str | bool] = {
        "model": setup.model,
        "model_provider": PROVIDER_ID,
        "approval_policy": "never",
        "sandbox_mode": "danger-full-access",
        "web_search": "disabled",
        "check_for_update_on_startup": False,
    }
    effort = setup.effort
    if effort is not None:
        if effort not in EFFORTS:
            raise AgentError(
                "agent_options_invalid",
                f"codex has no reasoning effort {effort!r} (it knows {', '.join(EFFORTS)})",
            )
        top["model_reasoning_effort"] = effort
    provider: dict[str, str | bool] = {
        "name": PROVIDER_ID,
        "base_url": setup.base_url,
        "wire_api": "responses",
    }
    if setup.has_key:
        provider["env_key"] = API_KEY_VARIABLE
    tables: dict[str, dict[str, str | bool]] = {
        "analytics": {"enabled": False},
        "feedback": {"enabled": False},
        "features": {"shell_snapshot": False},
        f"model_providers.{PROVIDER_ID}": provider,
    }
    lines = [f"{name} = {_toml(value)}" for name, value in top.items()]
    for table, entries in tables.items():
        lines += [
            "",
            f"[{table}]",
            *(f"{name} = {_toml(value)}" for name, value in entries.items()),
        ]
    return "\n".join(lines) + "\n"


def configure(setup: AgentSetup) -> AgentConfig:
    home = posixpath.join(setup.home, ".codex")
    return AgentConfig(
        files={
            posixpath.join(home, "config.toml"): codex_config(setup),
            posixpath.join(home, "installation_id"): INSTALLATION_ID + "\n",
        },
        env={"CODEX_HOME": home},
    )


AGENT = AgentDef(
    name="codex",
    bundle=BUNDLE,
    providers=("openai",),
    configure=configure,
    summary="OpenAI Codex through codex-acp (native binary); runs its own exec_command and "
    "apply_patch tools",
    records="commands (exec_command) as ACP execute tool calls with output and exit code; "
    "apply_patch edits only in the transcript",
    api_for={"openai": "openai-responses"},
    stop="term",
)
