"""The agents ageval runs from bundles, one module each (`AGENT = AgentDef(...)`).

Every module of this package but `base` is an agent: adding a module adds the agent, with no
list to edit. `agents()` imports them once.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil

from agevalx.agents.catalog.base import AgentDef


@functools.cache
def agents() -> dict[str, AgentDef]:
    """The catalog's agents by name."""
    found: dict[str, AgentDef] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda module: module.name):
        if info.name == "base" or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        agent = getattr(module, "AGENT", None)
        if isinstance(agent, AgentDef):
            found[agent.name] = agent
    return found


def agent(name: str) -> AgentDef | None:
    """The catalog agent `name`, or None."""
    return agents().get(name)
