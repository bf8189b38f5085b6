"""The format registry's half for agents: a format may bring agents of its own.

Harbor's (`--agent harbor:<name>`, the profile executor `harbor`, `formats/harbor/agents.py`)
run its Python agents against ageval's containers. What binds, keys, mounts and runs them
asks here (and `formats/agent_executors.py` for the executor that runs them), so that only the
registry names them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agevalx.agents.bundlespec import BundleSpec
    from agevalx.config.profiles import AgentProfile

_AGENT_PREFIX = "harbor:"
AGENT_EXECUTOR = "harbor"


def is_format_agent(name: str | None) -> bool:
    """Whether `--agent NAME` names an agent a format brings (`harbor:<name>`)."""
    return bool(name) and str(name).startswith(_AGENT_PREFIX)


def format_agent_profile(name: str, model: str | None) -> tuple[AgentProfile, str | None]:
    """The profile `--agent NAME --model MODEL` binds for a format's agent, and its model."""
    from agevalx.formats.harbor.agents import harbor_profile

    return harbor_profile(name, model)


def format_agent_key(name: str) -> object:
    """`--agent NAME` of a format's agent as a lock's key reads it."""
    from agevalx.formats.harbor.agents import key_value

    return key_value(name)


def format_agent_implementation(executor: str, entry: str | None) -> dict[str, str] | None:
    """What names the code of a format's agent in keys; None for another executor."""
    if executor != AGENT_EXECUTOR:
        return None
    from agevalx.formats.harbor.agents import implementation

    return implementation(entry)


def format_profile_bundles(profile: Mapping[str, Any]) -> tuple[BundleSpec, ...] | None:
    """The tool bundles a format's agent mounts; None for a profile of another executor."""
    if profile.get("executor") != AGENT_EXECUTOR:
        return None
    from agevalx.formats.harbor.agents import tool_bundles

    return tool_bundles(profile)


def format_tool_bundles() -> dict[str, BundleSpec]:
    """The bundles of tools the formats' agents use in the container, by name."""
    from agevalx.formats.harbor.agents import TOOL_BUNDLES

    return dict(TOOL_BUNDLES)
