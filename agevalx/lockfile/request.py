"""What the command line asks of binding (`--agent`, `--model`, `--profiles`), and how the
lock's key reads `--agent`.

Apart from `agevalx.lockfile.binding`, which resolves a request into a lock's roles, so that
planning a dataset whose locks are cached loads neither the profiles' models nor the agents.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agevalx.errors import UsageError

PROFILES_FILE = "profiles.yaml"


@dataclass(frozen=True)
class BindingRequest:
    """What the command line asks for."""

    agent: str | None = None
    model: str | None = None
    profiles: Path | None = None
    fork_model: str | None = None
    """`--fork ... --model M`: every role of the task keeps its profile but talks to M."""
    profiles_name: str | None = None
    """The name the lock records for `profiles` when it is the copy an attempt kept of the
    file it was bound with (a replay or fork of it): the original file's, so the lock is the
    same."""

    def check(self) -> None:
        if self.agent is not None and self.profiles is not None:
            raise UsageError(
                "agent_profiles_conflict",
                "--agent and --profiles cannot be used together",
                field="--agent",
                hint="bind agents either with one --agent or with a profiles file",
            )
        for flag, value in (("--agent", self.agent), ("--model", self.model)):
            if value is not None and not value.strip():
                raise UsageError(
                    "empty_value", f"{flag} needs a non-empty value", field=flag, hint=None
                )
        if self.model is not None and self.agent is None:
            raise UsageError(
                "model_requires_agent",
                "--model needs --agent",
                field="--model",
                hint="pass --agent NAME --model MODEL, or set model.id in profiles.yaml",
            )


def agent_key_value(name: str | None) -> Any:
    """`--agent` as the lock's key reads it. A catalog agent's profile takes its endpoint from
    the environment when the lock is made, so its key holds those variables too: the same
    command with another `$OPENAI_BASE_URL` is another lock, never the cached one."""
    from agevalx.formats.agent_registry import format_agent_key, is_format_agent

    if name and is_format_agent(name):
        return format_agent_key(name)
    if not name:
        return name
    from agevalx.agents import catalog
    from agevalx.agents.catalog.base import provider_named

    agent = catalog.agent(name)
    if agent is None:
        return name
    variables = sorted(
        provider.base_url_variable
        for provider in map(provider_named, agent.providers)
        if provider is not None
    )
    return [name, {variable: os.environ.get(variable) for variable in variables}]
