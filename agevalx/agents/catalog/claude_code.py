"""Claude Code through Zed's ACP adapter (`@zed-industries/claude-code-acp`).

The adapter runs Claude Code through the Claude Agent SDK, which starts the CLI that ships
inside it (`@anthropic-ai/claude-agent-sdk/cli.js`) with the adapter's own Node: the bundle
needs no `claude` executable and no `CLAUDE_CODE_EXECUTABLE`. Everything is configured by
variables; ageval writes no file:

- `ANTHROPIC_BASE_URL` is the gateway (its origin: Claude Code appends `/v1/messages`);
- `ANTHROPIC_API_KEY` receives the gateway's token, passed by name (Claude Code sends it as
  `x-api-key`); with no key, a placeholder, since Claude Code refuses to start without one;
- the model goes into `ANTHROPIC_MODEL` and into every alias Claude Code resolves on its own
  (`ANTHROPIC_DEFAULT_SONNET_MODEL`, `..._OPUS_...`, `..._HAIKU_...`, the small-fast and the
  subagent model): the adapter picks the "default" entry of its model list, which is the
  sonnet alias, so `ANTHROPIC_MODEL` alone is not enough;
- `model.reasoning.effort` becomes `MAX_THINKING_TOKENS` (none: 0, thinking off);
- telemetry, error reporting, the auto-updater and all other non-essential traffic are off
  (the bundle's fixed environment), and so is "fast mode": without
  `CLAUDE_CODE_DISABLE_FAST_MODE` Claude Code asks `api.anthropic.com` for the organisation's
  fast-mode status at every start, with the key, whatever `ANTHROPIC_BASE_URL` says. With
  these, it contacts nothing but its base URL (checked through a logging proxy over a whole
  session).

Claude Code needs no login and no onboarding state in HOME when it runs under the SDK with a
key. As root it refuses `--dangerously-skip-permissions`; the adapter then keeps its
`default` permission mode and asks the client (`session/request_permission`), which ageval
answers by the role's policy. ageval's client offers terminals and file access, so the
adapter hides Claude Code's own Bash/Read/Write/Edit and gives the model its ACP tools
(`mcp__acp__Bash`, `mcp__acp__Read`, `mcp__acp__Write`, `mcp__acp__Edit`): commands run in
ACP terminals and files go through `fs/*`, so every action is ageval's to record.

The adapter keeps running when its stdin closes (the Claude Code process it started keeps its
event loop alive). It is not stopped with SIGTERM: the Claude Code process, once its adapter
is gone, connects to `api.anthropic.com:443` on its way out (measured through a logging
proxy; the endpoint is not known, it is TLS). So its process group is killed as soon as the
turn is answered (`stop="kill"`), which never lets it do that and costs no grace period.
"""

from __future__ import annotations

from agevalx.agents.base import AgentError
from agevalx.agents.bundlespec import BundleSpec
from agevalx.agents.catalog.base import AgentConfig, AgentDef, AgentSetup

ADAPTER = "@zed-industries/claude-code-acp"
SDK = "@anthropic-ai/claude-agent-sdk"

BUNDLE = BundleSpec(
    name="claude-code",
    packages=((ADAPTER, "0.16.2"), (SDK, "0.2.44")),
    node="22.23.5",
    entry=f"node_modules/{ADAPTER}/dist/index.js",
    environment=(
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ("DISABLE_TELEMETRY", "1"),
        ("DISABLE_ERROR_REPORTING", "1"),
        ("DISABLE_AUTOUPDATER", "1"),
        ("DISABLE_BUG_COMMAND", "1"),
        ("CLAUDE_CODE_DISABLE_FAST_MODE", "1"),
    ),
    prune=(
        "node_modules/node-linux-*/include",
        "node_modules/node-linux-*/share",
        "**/*.map",
        f"node_modules/{SDK}/vendor/ripgrep/*-darwin",
        f"node_modules/{SDK}/vendor/ripgrep/*-win32",
    ),
)
"""The adapter pins the SDK exactly (0.16.2 -> 0.2.44, Claude Code 2.1.44); it is listed so
the pin shows. The ripgrep builds for other systems are dropped."""

KEY_VARIABLE = "ANTHROPIC_API_KEY"
NO_KEY = "ageval-no-key"
"""What Claude Code gets as key when the role has none (a local server that checks none)."""

MODEL_VARIABLES = (
    "ANTHROPIC_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
    "CLAUDE_CODE_SUBAGENT_MODEL",
)
"""Every variable Claude Code reads a model from: all get the role's model."""

THINKING_TOKENS = {"none": 0, "low": 4000, "medium": 10000, "high": 31999}
"""`model.reasoning.effort` -> `MAX_THINKING_TOKENS` (Claude Code's own budgets: "think",
"think hard", and its default maximum)."""


def configure(setup: AgentSetup) -> AgentConfig:
    env = {name: setup.model for name in MODEL_VARIABLES}
    env["ANTHROPIC_BASE_URL"] = setup.base_url
    effort = setup.effort
    if effort is not None:
        if effort not in THINKING_TOKENS:
            raise AgentError(
                "agent_options_invalid",
                f"claude-code has no reasoning effort {effort!r} "
                f"(it knows {', '.join(THINKING_TOKENS)})",
            )
        env["MAX_THINKING_TOKENS"] = str(THINKING_TOKENS[effort])
    if not setup.has_key:
        env[KEY_VARIABLE] = NO_KEY
    return AgentConfig(env=env, key_variables=(KEY_VARIABLE,) if setup.has_key else ())


AGENT = AgentDef(
    name="claude-code",
    bundle=BUNDLE,
    providers=("anthropic",),
    configure=configure,
    summary="Claude Code 2.1.44 (agent SDK 0.2.44) through claude-code-acp; commands in ACP "
    "terminals, files through fs/*",
    records="ACP terminals (command, output, exit code), fs reads and writes, permissions",
    release="2.1.44",
    stop="kill",
)
