"""The modules an oracle run of an ageval dataset must not import (checked by a unit test
in a fresh interpreter and by an integration test in a real `ageval run`)."""

from __future__ import annotations

NOT_FOR_AN_ORACLE_RUN = ("acp", "aiohttp", "rich", "networkx")
"""networkx: the planner's own graph serves planning and executing a run (`graph.dag`)."""
AGEVALX_NOT_FOR_AN_ORACLE_RUN = (
    "agevalx.agents.acp.executor",
    "agevalx.formats.harbor.format",
    "agevalx.gateway.server",
    "agevalx.formats.harbor",
    "agevalx.reports",
)


def loaded(modules: list[str]) -> list[str]:
    """The modules of NOT_FOR_AN_ORACLE_RUN (by top-level package) and of
    AGEVALX_NOT_FOR_AN_ORACLE_RUN (a package and its submodules) among `modules`."""
    roots = {name.split(".")[0] for name in modules}
    found = [name for name in NOT_FOR_AN_ORACLE_RUN if name in roots]
    found += [
        name
        for name in modules
        if any(
            name == package or name.startswith(package + ".")
            for package in AGEVALX_NOT_FOR_AN_ORACLE_RUN
        )
    ]
    return found
