"""What an agent bundle is made of (`BundleSpec`): the one thing the catalog's and Harbor's
agents declare about their bundles. Building and mounting them is `agevalx.agents.bundles`,
which reads every agent's spec; the specs import only this module, so no agent module
imports the builder that reads it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

BUNDLE_FORMAT = 1
"""Bumped whenever the layout of a built bundle changes (it is part of every key)."""


@dataclass(frozen=True)
class BundleSpec:
    """What goes into one agent's bundle and how to start it; every field is part of its key."""

    name: str
    """The bundle's name and the profile entry that selects it (`options.entry: pi`)."""
    packages: tuple[tuple[str, str], ...]
    """npm packages and their exact versions."""
    node: str
    """Exact version of the Node binary package (`node-linux-<arch>`)."""
    entry: str
    """The ACP agent's script, relative to the bundle, run with the bundled Node."""
    wrappers: tuple[tuple[str, str], ...] = ()
    """`bin/<name>` scripts to write: (name, script relative to the bundle)."""
    environment: tuple[tuple[str, str], ...] = ()
    """Variables the agent needs; `{root}` stands for the bundle's path in the container."""
    prune: tuple[str, ...] = ()
    """Glob patterns (relative to the bundle) removed after the install: unused at run time."""
    kind: str = "node"
    """`node` (npm packages on a bundled Node) or `python` (PyPI packages on a bundled
    CPython, built by `agevalx.agents.pybundles`)."""
    arguments: tuple[str, ...] = ()
    """Fixed arguments after the entry (`--experimental-acp`)."""
    interpreter: str = "node"
    """The program, relative to the bundle, that runs `entry`; empty when `entry` is itself
    executable (a native binary)."""
    runtime: str = ""
    """The bundled runtime's version for kinds other than `node` (CPython's, for `python`)."""
    files: tuple[tuple[str, str], ...] = ()
    """Extra files written into the bundle: (path relative to the bundle, text)."""
    pip_options: tuple[str, ...] = ()
    """Extra `pip install` options for a python bundle (`--ignore-requires-python`)."""

    def key_material(self, platform: str) -> dict[str, Any]:
        material: dict[str, Any] = {
            "format": BUNDLE_FORMAT,
            "name": self.name,
            "packages": [list(pair) for pair in self.packages],
            "node": self.node,
            "platform": platform,
            "entry": self.entry,
            "wrappers": [list(pair) for pair in self.wrappers],
            "environment": [list(pair) for pair in self.environment],
            "prune": list(self.prune),
        }
        # Fields added later enter the material only when set, so older keys stay the same.
        extra: dict[str, Any] = {
            "kind": self.kind if self.kind != "node" else None,
            "arguments": list(self.arguments) or None,
            "interpreter": self.interpreter if self.interpreter != "node" else None,
            "runtime": self.runtime or None,
            "files": [list(pair) for pair in self.files] or None,
            "pip_options": list(self.pip_options) or None,
        }
        material.update({name: value for name, value in extra.items() if value is not None})
        return material
