"""pi (`@earendil-works/pi-coding-agent`) behind its ACP adapter `pi-acp`.

ageval writes pi's `models.json` (one provider, `ageval`, with the endpoint, the API and the
key *variable*: `"$AGEVAL_API_KEY"`, which pi expands itself) and `settings.json` (the default
provider, model and thinking level) into `~/.pi/agent/` before each invocation.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping
from typing import Any

from agevalx.agents.base import AgentError
from agevalx.agents.bundlespec import BundleSpec
from agevalx.agents.catalog.base import AgentConfig, AgentDef, AgentSetup

API_KEY_VARIABLE = "AGEVAL_API_KEY"
"""The variable holding the key (the gateway's token) in the agent's environment."""

NO_KEY = "ageval-no-key"
"""What pi gets as key when the profile has none (local servers ignore it; pi needs one)."""

PI_PROVIDER = "ageval"
"""The provider id ageval writes into pi's models.json."""

PI_APIS = {
    None: "openai-completions",
    "chat": "openai-completions",
    "responses": "openai-responses",
}
PI_THINKING = ("off", "minimal", "low", "medium", "high", "xhigh", "max")

BUNDLE = BundleSpec(
    name="pi",
    packages=(("pi-acp", "0.0.34"), ("@earendil-works/pi-coding-agent", "1.6.0")),
    node="22.23.5",
    entry="node_modules/pi-acp/dist/index.js",
    wrappers=(("pi", "node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js"),),
    environment=(
        ("PI_ACP_PI_COMMAND", "{root}/bin/pi"),
        ("PI_OFFLINE", "1"),
        ("PI_SKIP_VERSION_CHECK", "1"),
        ("PI_TELEMETRY", "0"),
    ),
    prune=("node_modules/node-linux-*/include", "node_modules/node-linux-*/share", "**/*.map"),
)


def pi_config(
    profile: Mapping[str, Any], base_url: str | None, model_id: str | None, *, has_key: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """pi's `models.json` and `settings.json` for a role's locked profile.

    `base_url` is the endpoint as the agent reaches it (the gateway's, for a routed role).
    Profile keys read: `model.api` (`chat` -> `openai-completions`, `responses` ->
    `openai-responses`), `model.reasoning.effort` (pi's startup thinking level),
    `model.extra` (pi `samplingParams`, merged into every request), `options.pi_model` /
    `options.pi_settings` (merged as-is into the model entry / settings).
    """
    model = dict(profile.get("model") or {})
    options = dict(profile.get("options") or {})
    if not base_url:
        raise AgentError(
            "agent_base_url_missing",
            "pi needs the model endpoint: set base_url in the role's profile",
        )
    if not model_id:
        raise AgentError("agent_model_missing", "pi needs a model: set model.id in the profile")
    api = PI_APIS.get(model.get("api"))
    if api is None:
        raise AgentError("agent_options_invalid", f"model.api {model.get('api')!r} is unknown")
    entry: dict[str, Any] = {"id": model_id, "name": model_id}
    settings: dict[str, Any] = {
        "defaultProvider": PI_PROVIDER,
        "defaultModel": model_id,
        "quietStartup": True,
    }
    effort = (model.get("reasoning") or {}).get("effort")
    if effort is not None:
        level = "off" if effort == "none" else effort
        if level not in PI_THINKING:
            raise AgentError(
                "agent_options_invalid",
                f"pi has no thinking level {effort!r} (it knows {', '.join(PI_THINKING)})",
            )
        entry["reasoning"] = level != "off"
        settings["defaultThinkingLevel"] = level
    if model.get("extra"):
        entry["samplingParams"] = dict(model["extra"])
    entry.update(_mapping(options.get("pi_model"), "options.pi_model"))
    settings.update(_mapping(options.get("pi_settings"), "options.pi_settings"))
    provider = {
        "baseUrl": base_url,
        "api": api,
        "apiKey": f"${API_KEY_VARIABLE}" if has_key else NO_KEY,
        "models": [entry],
    }
    return {"providers": {PI_PROVIDER: provider}}, settings


def _mapping(value: Any, name: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise AgentError("agent_options_invalid", f"{name} must be a mapping")
    return dict(value)


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True) + "\n"


def configure(setup: AgentSetup) -> AgentConfig:
    models, settings = pi_config(setup.profile, setup.base_url, setup.model, has_key=setup.has_key)
    directory = posixpath.join(setup.home, ".pi", "agent")
    return AgentConfig(
        files={
            posixpath.join(directory, "models.json"): _json(models),
            posixpath.join(directory, "settings.json"): _json(settings),
        }
    )


AGENT = AgentDef(
    name="pi",
    bundle=BUNDLE,
    providers=("openai", "openrouter", "deepseek"),
    configure=configure,
    summary="pi coding agent through pi-acp; runs its own bash, read, edit and write tools",
    records="ACP tool calls (kind execute) with their output and exit code",
    package="@earendil-works/pi-coding-agent",
)
