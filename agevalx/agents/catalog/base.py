"""What an agent of the catalog is: its bundle, the model APIs it speaks, how to configure it.

An agent of the catalog runs from a bundle (`agevalx.agents.bundles`): nothing of it is in
the task image. When an invocation starts, the executor hands the agent's `configure` an
`AgentSetup` (the model, the endpoint as the container reaches it, the agent's HOME, the
bundle's folder) and gets back an `AgentConfig`: files to write under HOME, plain variables,
the variables that receive the key, and extra arguments. The key itself (the model gateway's
per-attempt token) only ever travels in the agent process's environment, passed by name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agevalx.agents.bundlespec import BundleSpec

Api = Literal["openai-chat", "openai-responses", "anthropic-messages", "gemini"]
"""The model APIs the gateway relays and the mock model serves."""

API_NAMES: dict[str, str] = {
    "openai-chat": "OpenAI chat completions",
    "openai-responses": "OpenAI responses",
    "anthropic-messages": "Anthropic messages",
    "gemini": "Gemini generateContent",
}


@dataclass(frozen=True)
class Provider:
    """A model provider as `--model provider/model` names it."""

    name: str
    key_variable: str
    """The user's variable holding the key (the lock keeps `${<it>}`, never the value)."""
    base_url_variable: str
    """The variable overriding the endpoint, read when the lock is made."""
    default_base_url: str
    api: Api
    """The API the provider speaks."""


PROVIDERS: dict[str, Provider] = {
    provider.name: provider
    for provider in (
        Provider(
            "openai",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "https://api.openai.com/v1",
            "openai-chat",
        ),
        Provider(
            "anthropic",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            "https://api.anthropic.com",
            "anthropic-messages",
        ),
        Provider(
            "gemini",
            "GEMINI_API_KEY",
            "GEMINI_BASE_URL",
            "https://generativelanguage.googleapis.com",
            "gemini",
        ),
        Provider(
            "openrouter",
            "OPENROUTER_API_KEY",
            "OPENROUTER_BASE_URL",
            "https://openrouter.ai/api/v1",
            "openai-chat",
        ),
        Provider(
            "deepseek",
            "DEEPSEEK_API_KEY",
            "DEEPSEEK_BASE_URL",
            "https://api.deepseek.com/v1",
            "openai-chat",
        ),
    )
}
"""Known providers by name."""

PROVIDER_ALIASES = {"google": "gemini"}
"""Other names `--model provider/...` accepts for a provider."""


def provider_named(name: str) -> Provider | None:
    """The provider `name` (or one of its aliases), or None."""
    return PROVIDERS.get(PROVIDER_ALIASES.get(name, name))


@dataclass(frozen=True)
class AgentSetup:
    """What an agent's configurator knows when an invocation starts."""

    model: str
    """The model id, without a provider prefix."""
    provider: Provider
    api: Api
    base_url: str
    """Where the agent sends its requests: the gateway as the container reaches it, with the
    provider's path (`.../v1` for OpenAI-style APIs)."""
    has_key: bool
    """The agent process has a key (the gateway's token) in `AGEVAL_API_KEY`."""
    home: str
    workdir: str
    root: str
    """The bundle's folder as the agent process sees it."""
    profile: Mapping[str, Any]
    """The role's locked profile (model.reasoning, options, ...)."""

    @property
    def effort(self) -> str | None:
        """The profile's `model.reasoning.effort`, if any."""
        model = self.profile.get("model") or {}
        value = (model.get("reasoning") or {}).get("effort")
        return value if isinstance(value, str) else None


@dataclass(frozen=True)
class AgentConfig:
    """What a configurator asks for."""

    files: Mapping[str, str] = field(default_factory=dict)
    """Container path (under the agent's HOME) -> text, written as the agent's user."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Plain variables (never the key)."""
    key_variables: tuple[str, ...] = ()
    """Variables that receive the key, passed by name to the agent process only."""
    args: tuple[str, ...] = ()
    """Appended to the bundle's command line."""


Configure = Callable[[AgentSetup], AgentConfig]


@dataclass(frozen=True)
class AgentDef:
    """One agent of the catalog."""

    name: str
    """`--agent NAME` and `options.entry: NAME`."""
    bundle: BundleSpec
    providers: tuple[str, ...]
    """The providers it can talk to; the first is the default."""
    configure: Configure
    summary: str
    """One line for `ageval agents` and the README."""
    records: str = "ACP tool calls and their output"
    """What its activity.jsonl holds."""
    api_for: Mapping[str, Api] = field(default_factory=dict)
    """Per provider, the API the agent uses when it is not the provider's own."""
    package: str = ""
    """The package whose version is the agent's (default: the bundle's first)."""
    release: str = ""
    """The agent's own version when no package carries it (Claude Code inside its SDK)."""
    stop: Literal["eof", "term", "kill"] = "eof"
    """How an invocation ends the agent once its turn is answered: `eof` closes its stdin
    and waits up to 2 s for it to exit (then kills it); `term` also sends its process group
    SIGTERM (an agent that keeps running when its stdin closes); `kill` kills the group at
    once (an agent whose own shutdown does something it must not, like calling home)."""
    handshake_seconds: float | None = None
    """How long its ACP handshake (`initialize`, `session/new`) may take when that is longer
    than the executor's 60 s: an agent that starts a server of its own before it answers."""

    def api(self, provider: Provider) -> Api:
        return self.api_for.get(provider.name, provider.api)

    @property
    def version(self) -> str:
        """The agent's own package version."""
        versions = dict(self.bundle.packages)
        if self.release:
            return self.release
        if self.package:
            return versions.get(self.package, "")
        return self.bundle.packages[0][1] if self.bundle.packages else ""
