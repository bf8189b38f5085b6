"""openclaw (npm `openclaw`), through `openclaw acp`: an ACP bridge to an OpenClaw Gateway.

`openclaw acp` does not run the agent itself: it forwards each prompt over WebSocket to a
Gateway, which runs the agent loop, its tools (`exec`, `read`, `write`, `edit`, ...) and the
model calls. So the bundle's `openclaw-acp.sh` starts a Gateway for the invocation on the
container's loopback (its state under `~/.openclaw`), waits for it to be ready, runs the
bridge against it, and stops the Gateway when the bridge ends, waiting for it to exit (it
writes its state as it shuts down: an unpaused commit of the container right after found its
SQLite files changing under it). openclaw needs Node 24.

The package's postinstall (`scripts/postinstall-bundled-plugins.mjs`, skipped by
`--ignore-scripts`) prunes dist files of an older install (a fresh install has none),
restores the fs-safe native helper if npm left it out (openclaw runs without it), and removes
`.openclaw-lifecycle-pending`; without that last step openclaw refuses to start on a
read-only install. The bundle prunes that marker, which is the whole of the postinstall on a
fresh install.

Configuration, `~/.openclaw/openclaw.json`, written before each invocation:

- the Gateway: local, loopback only, no auth (nothing but the container reaches it), no
  Control UI (`gateway.controlUi.enabled`): with it on, every Gateway start copies the web
  dashboard's assets, 52 MB, into `~/.openclaw/cache/control-ui-assets`, which nothing in a
  container serves and which each run checkpoint, commit and cache entry then carried (a
  checkpoint of harbor-demo `hello` held 55.8 MB of home, 1.6 MB without them);
- one provider, `ageval` (`openai-completions`, the gateway's URL, the key as
  `${AGEVAL_API_KEY}`, which openclaw expands from its environment), replacing the built-in
  catalogue; the default model is the role's;
- `agents.defaults.cwd`: the task's working directory (tools would run in the agent's own
  workspace, `~/.openclaw/workspace`, otherwise); `skipBootstrap`: no persona files;
- no update check (`update.checkOnStart`, `OPENCLAW_NO_AUTO_UPDATE`), no telemetry
  (`telemetry.enabled`, `DO_NOT_TRACK`, `CLAWHUB_DISABLE_TELEMETRY`), no remote model
  catalogue (`models.catalogRefresh`), no mDNS (`OPENCLAW_DISABLE_BONJOUR`).

No compile cache (`NODE_DISABLE_COMPILE_CACHE`): openclaw turns on Node's module compile cache
under the temporary directory, which in an attempt container is always empty at the start:
filling it cost each `openclaw` process more CPU than no cache (a Gateway's start took 14.9 s
of CPU where it took 12.1 s without one), and it left 28 MB in every run checkpoint.

Still phoning home: the Gateway's plugin management loads ClawHub's plugin feed
(`clawhub.ai/v1/feeds/plugins`) with no setting to stop it; it falls back to the bundled
catalogue when that fails, as it does behind `egress: llm`.

Commands run in the Gateway's `exec` tool; the bridge reports each as an ACP tool call of kind
`execute` (`rawInput.command`, `rawOutput.details.exitCode`). The Gateway's requests carry
the date, the time to the minute, session ids and the container's hostname in the prompt;
`replay --model-traffic` leaves those out of its comparison (`gateway.replaying.VOLATILE`).
"""

from __future__ import annotations

import json
import posixpath
from typing import Any

from agevalx.agents.bundlespec import BundleSpec
from agevalx.agents.catalog.base import AgentConfig, AgentDef, AgentSetup

VERSION = "2026.9.6"

PROVIDER = "ageval"
"""The provider id written into openclaw.json."""

NO_KEY = "ageval-no-key"
"""The key openclaw gets when the profile has none (it needs one)."""

GATEWAY_PORT = 18789
"""The Gateway's port on the container's loopback."""

LAUNCHER = """#!/bin/sh
# Written by ageval: `openclaw acp` is a bridge to an OpenClaw Gateway. Start one on the
# container's loopback, wait until it is ready, run the bridge, stop the Gateway at the end.
root="${0%/*}"
cli="$root/node_modules/openclaw/openclaw.mjs"
state="${OPENCLAW_STATE_DIR:-$HOME/.openclaw}"
log="$state/ageval-gateway.log"
port="${OPENCLAW_GATEWAY_PORT:-18789}"
mkdir -p "$state" || exit 1
"$root/node" "$cli" gateway run --port "$port" >"$log" 2>&1 &
gateway=$!
# At the end, the Gateway is stopped and waited for (killed after 10 s): it writes its state
# as it shuts down, and the invocation's checkpoint and commit follow right after.
stop() {
  kill "$gateway" 2>/dev/null || return 0
  tries=0
  while [ "$tries" -lt 100 ] && ! grep -qs '^State:[[:space:]]*Z' "/proc/$gateway/status" &&
    [ -e "/proc/$gateway" ]; do
    sleep 0.1
    tries=$((tries + 1))
  done
  kill -9 "$gateway" 2>/dev/null
  wait "$gateway" 2>/dev/null
}
trap stop EXIT
trap 'exit 143' INT TERM HUP
waited=0
until grep -q '\\[gateway\\] ready' "$log" 2>/dev/null; do
  if ! kill -0 "$gateway" 2>/dev/null || [ "$waited" -ge 1800 ]; then
    echo "ageval: the OpenClaw Gateway did not start; its log:" >&2
    cat "$log" >&2
    exit 1
  fi
  sleep 0.1
  waited=$((waited + 1))
done
"$root/node" "$cli" acp --url "ws://127.0.0.1:$port" "$@"
"""

BUNDLE = BundleSpec(
    name="openclaw",
    packages=(("openclaw", VERSION),),
    node="24.22.3",
    entry="openclaw-acp.sh",
    interpreter="/bin/sh",
    files=(("openclaw-acp.sh", LAUNCHER),),
    environment=(
        ("OPENCLAW_GATEWAY_PORT", str(GATEWAY_PORT)),
        ("OPENCLAW_NO_AUTO_UPDATE", "1"),
        ("OPENCLAW_DISABLE_BONJOUR", "1"),
        ("DO_NOT_TRACK", "1"),
        ("CLAWHUB_DISABLE_TELEMETRY", "1"),
        ("NO_COLOR", "1"),
        ("NODE_DISABLE_COMPILE_CACHE", "1"),
    ),
    prune=(
        "node_modules/openclaw/.openclaw-lifecycle-pending",
        "node_modules/node-linux-*/include",
        "node_modules/node-linux-*/share",
    ),
)


def openclaw_config(setup: AgentSetup) -> dict[str, Any]:
    """openclaw.json for one invocation: a local Gateway whose only model is the role's."""
    model = {
        "id": setup.model,
        "name": setup.model,
        "reasoning": False,
        "input": ["text"],
        "contextWindow": 128000,
        "maxTokens": 8192,
    }
    provider = {
        "baseUrl": setup.base_url,
        "apiKey": "${AGEVAL_API_KEY}" if setup.has_key else NO_KEY,
        "api": "openai-completions",
        "models": [model],
    }
    return {
        "gateway": {
            "mode": "local",
            "port": GATEWAY_PORT,
            "bind": "loopback",
            "auth": {"mode": "none"},
            "controlUi": {"enabled": False},
        },
        "update": {"checkOnStart": False},
        "telemetry": {"enabled": False},
        "agents": {
            "defaults": {
                "model": {"primary": f"{PROVIDER}/{setup.model}"},
                "cwd": setup.workdir,
                "skipBootstrap": True,
            }
        },
        "models": {
            "mode": "replace",
            "catalogRefresh": {"enabled": False},
            "providers": {PROVIDER: provider},
        },
    }


def configure(setup: AgentSetup) -> AgentConfig:
    path = posixpath.join(setup.home, ".openclaw", "openclaw.json")
    text = json.dumps(openclaw_config(setup), indent=2, sort_keys=True) + "\n"
    return AgentConfig(files={path: text}, key_variables=("AGEVAL_API_KEY",))


AGENT = AgentDef(
    name="openclaw",
    bundle=BUNDLE,
    providers=("openai", "openrouter", "deepseek"),
    configure=configure,
    summary="OpenClaw through `openclaw acp`, bridged to a Gateway started in the container",
    records="ACP tool calls (kind execute) of its exec tool, with output and exit code",
    # The bridge answers `initialize` only once the Gateway is ready: 9 s on a quiet 2-core
    # machine, over 60 s on a loaded one. The launcher gives up on the Gateway after 1,800
    # waits of 0.1 s (and prints its log); the handshake outlasts that, so its error is the one
    # reported.
    handshake_seconds=240.0,
)
