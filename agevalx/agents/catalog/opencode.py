"""opencode (`opencode-ai`), through its own ACP server: `opencode acp`.

opencode is one native binary per platform (npm `opencode-linux-x64`, `...-arm64`, ...; a Bun
executable needing only glibc 2.17). The `opencode-ai` package's postinstall picks the binary
for the machine, which `npm install --ignore-scripts` skips: the bundle's `opencode.sh` does
the same choice when the agent starts (`uname -m`). On x64 it keeps only the "baseline" build,
which runs on every x86-64 CPU (the other one needs AVX2); opencode never uses Node, so the
bundled Node is pruned.

Configuration, written before each invocation into `~/.config/opencode/` (the key itself never
is; opencode reads it from `AGEVAL_API_KEY` by its `{env:...}` syntax):

- `opencode.json`: one provider, `ageval` (`@ai-sdk/openai-compatible`, compiled into the
  binary: nothing is downloaded), its `baseURL` the gateway, its one model the role's model;
  `autoupdate` off, sharing disabled, and the `title` agent disabled. That agent names the
  session with an extra model request made concurrently with the first turn: it costs a
  request, and its order against the turn's request varies, which `replay --model-traffic`
  (matching requests in order) could not follow.
- `package.json`, `package-lock.json` and an empty `node_modules/`: at start opencode runs
  an npm install of `@opencode-ai/plugin` into each config folder that has no `node_modules`
  (the typings for local plugins; ageval adds none), which would reach for the npm registry.
  A folder whose lock already lists the package is left alone.

The variables `OPENCODE_DISABLE_AUTOUPDATE`, `..._MODELS_FETCH` (the models.dev catalogue),
`..._DEFAULT_PLUGINS`, `..._LSP_DOWNLOAD` and `..._SHARE` keep it from anything but the model.

opencode runs commands with its own `bash` tool (never the client's `terminal/*`) and reports
each as an ACP tool call of kind `execute`: the command in `rawInput.command`, the output in
the content and `rawOutput.output`, the exit code in `rawOutput.metadata.exit`.

Its system prompt carries the day (`Today's date: Thu Dec 03 2026`), which
`replay --model-traffic` leaves out of its comparison (`gateway.replaying.VOLATILE`).
"""

from __future__ import annotations

import json
import posixpath
from typing import Any

from agevalx.agents.bundlespec import BundleSpec
from agevalx.agents.catalog.base import AgentConfig, AgentDef, AgentSetup

VERSION = "1.18.33"

PROVIDER = "ageval"
"""The provider id written into opencode.json."""

PLUGIN_PACKAGE = "@opencode-ai/plugin"
"""What opencode installs into each config folder at start unless the folder has it locked."""

LAUNCHER = """#!/bin/sh
# Written by ageval: runs the opencode binary for this machine, as opencode-ai's postinstall
# would have linked it (the bundle is installed with --ignore-scripts).
case "$(uname -m)" in
  x86_64 | amd64) platform=x64-baseline ;;
  aarch64 | arm64) platform=arm64 ;;
  *) echo "ageval: the opencode bundle has no binary for $(uname -m)" >&2; exit 1 ;;
esac
exec "${0%/*}/node_modules/opencode-linux-$platform/bin/opencode" "$@"
"""

BUNDLE = BundleSpec(
    name="opencode",
    packages=(("opencode-ai", VERSION),),
    node="22.23.5",
    entry="opencode.sh",
    interpreter="/bin/sh",
    arguments=("acp",),
    files=(("opencode.sh", LAUNCHER),),
    environment=(
        ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
        ("OPENCODE_DISABLE_MODELS_FETCH", "1"),
        ("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1"),
        ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1"),
        ("OPENCODE_DISABLE_SHARE", "1"),
    ),
    prune=(
        "node",
        "node_modules/node-linux-*",
        "node_modules/opencode-linux-x64",
        "node_modules/opencode-linux-x64-musl",
        "node_modules/opencode-linux-x64-baseline-musl",
        "node_modules/opencode-linux-arm64-musl",
    ),
)


def opencode_config(setup: AgentSetup) -> dict[str, Any]:
    """opencode.json for one invocation: the gateway as the only provider, nothing else."""
    options: dict[str, Any] = {"baseURL": setup.base_url}
    if setup.has_key:
        options["apiKey"] = "{env:AGEVAL_API_KEY}"
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": PROVIDER,
        "options": options,
        "models": {setup.model: {"name": setup.model}},
    }
    return {
        "$schema": "https://opencode.ai/config.json",
        "model": f"{PROVIDER}/{setup.model}",
        "provider": {PROVIDER: provider},
        "autoupdate": False,
        "share": "disabled",
        "agent": {"title": {"disable": True}},
    }


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True) + "\n"


def configure(setup: AgentSetup) -> AgentConfig:
    directory = posixpath.join(setup.home, ".config", "opencode")
    locked = {"dependencies": {PLUGIN_PACKAGE: VERSION}}
    lock = {"lockfileVersion": 3, "requires": True, "packages": {"": locked}}
    return AgentConfig(
        files={
            posixpath.join(directory, "opencode.json"): _json(opencode_config(setup)),
            posixpath.join(directory, "package.json"): _json(locked),
            posixpath.join(directory, "package-lock.json"): _json(lock),
            posixpath.join(directory, "node_modules", ".ageval"): "",
        },
        key_variables=("AGEVAL_API_KEY",),
    )


AGENT = AgentDef(
    name="opencode",
    bundle=BUNDLE,
    providers=("openai", "openrouter", "deepseek"),
    configure=configure,
    summary="opencode through `opencode acp`; runs its own bash, read, edit, write, grep tools",
    records="ACP tool calls (kind execute) with their output and exit code",
)
