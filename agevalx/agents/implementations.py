"""What implements a bound agent, for the keys of the runs it makes.

A run is keyed by the code that acted in it: the scripted agent's source for a role that
runs it, an agent bundle's spec (packages and versions) for a bundled agent such as pi. An
agent installed in the task image is covered by the image's key; the oracle runs the task's
own solution, which the run's task files cover. A Harbor agent (`executor: harbor`) is
keyed by Harbor's version, the agent's name, ageval's runner and its tool bundles.
"""

from __future__ import annotations

import shlex

from agevalx.agents import bundles, scripted
from agevalx.hashing import digest_bytes, digest_json


def implementation(executor: str, entry: str | None) -> dict[str, str] | None:
    """`{"scripted_agent": <source digest>}`, `{"bundle": <name>, "spec": <digest>}`, a
    format's own agent's (`formats.format_agent_implementation`), or None for an agent whose
    code the run's other inputs already name."""
    from agevalx.formats.agent_registry import format_agent_implementation

    found = format_agent_implementation(executor, entry)
    if found is not None:
        return found
    if executor != "acp" or not entry:
        return None
    try:
        program = shlex.split(entry)[0]
    except (ValueError, IndexError):
        return None
    if program == scripted.ENTRY:
        return {"scripted_agent": digest_bytes(scripted.agent_source())}
    spec = bundles.bundle_spec(program)
    if spec is not None:
        material = {k: v for k, v in spec.key_material("").items() if k != "platform"}
        return {"bundle": spec.name, "spec": digest_json(material)}
    return None
