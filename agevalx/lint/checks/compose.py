"""Compose services beside the agent: ready before it starts, not privileged."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from agevalx.lint.rule import Hit
from agevalx.lint.source import LintTask, line_of


def _depends_on(service: Any) -> set[str]:
    depends = service.get("depends_on") if isinstance(service, dict) else None
    if isinstance(depends, list | dict):  # [db] or {db: {condition: ...}}
        return {str(name) for name in depends}
    return set()


def _healthchecked(service: Any) -> bool:
    check = service.get("healthcheck") if isinstance(service, dict) else None
    return isinstance(check, dict) and not check.get("disable")


def compose_healthcheck_missing(task: LintTask) -> Iterator[Hit]:
    compose = task.compose
    if compose is None:
        return
    name, text, services = compose
    needed = _depends_on(services.get("main"))
    if task.format == "ageval":  # the agent starts right after every sidecar is up
        needed |= {str(service) for service in services if service != "main"}
    for service in sorted(needed):
        if service in services and not _healthchecked(services[service]):
            yield Hit(
                name,
                line_of(text, rf"^\s+{re.escape(service)}\s*:"),
                f"the agent depends on the service {service!r}, which has no healthcheck: "
                "the agent may start before it is ready",
                "add a healthcheck (and `condition: service_healthy`) to the service",
            )


def privileged_container(task: LintTask) -> Iterator[Hit]:
    compose = task.compose
    if compose is None:
        return
    name, text, services = compose
    for service, settings in sorted(services.items()):
        if isinstance(settings, dict) and settings.get("privileged") is True:
            yield Hit(
                name,
                line_of(text, r"^\s+privileged\s*:\s*true"),
                f"the service {service!r} runs privileged: it owns the host's kernel",
                "drop privileged; add only the capabilities it needs (cap_add)",
            )
