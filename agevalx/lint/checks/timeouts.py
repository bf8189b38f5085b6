"""Stage budgets: present (Harbor's agent), positive, not absurd."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from agevalx.lint.rule import Hit, number, table, toml_line
from agevalx.lint.source import LintTask, line_of

MAX_TIMEOUT_SECONDS = 24 * 3600
VERIFIER_TIMEOUT_FACTOR = 10


@dataclass(frozen=True)
class _Timeout:
    label: str
    value: Any
    line: int | None
    explicit: bool


def _timeouts(task: LintTask) -> dict[str, _Timeout]:
    """The task's stage budgets as written: agent, verifier, and the others."""
    text = task.text(task.config_name)
    found: dict[str, _Timeout] = {}
    if task.format == "ageval":
        limits = table(task.config, "limits")
        names = {
            "agent": "wall_time_seconds",
            "environment": "environment_seconds",
            "verifier": "evaluate_seconds",
        }
        for stage, key in names.items():
            found[stage] = _Timeout(
                f"limits.{key}", limits.get(key), line_of(text, rf"^\s*{key}\s*:"), key in limits
            )
        return found
    places = {
        "agent": ("agent", "timeout_sec"),
        "verifier": ("verifier", "timeout_sec"),
        "environment": ("environment", "build_timeout_sec"),
    }
    for stage, (section, key) in places.items():
        values = table(task.config, section)
        found[stage] = _Timeout(
            f"[{section}] {key}", values.get(key), toml_line(text, section, key), key in values
        )
    return found


def timeout_missing(task: LintTask) -> Iterator[Hit]:
    if task.config is None:  # task.toml does not parse: task_unreadable says so
        return
    agent = _timeouts(task)["agent"]
    if not agent.explicit:
        yield Hit(
            task.config_name,
            line_of(task.text(task.config_name), r"^\s*\[agent\]"),
            f"{agent.label} is not set: the agent may run forever",
            "set [agent] timeout_sec to the time a good agent needs, with some margin",
        )


def timeout_invalid(task: LintTask) -> Iterator[Hit]:
    for timeout in _timeouts(task).values():
        seconds = number(timeout.value)
        if timeout.explicit and (seconds is None or seconds <= 0):
            yield Hit(
                task.config_name,
                timeout.line,
                f"{timeout.label} is {timeout.value!r}: a stage budget must be a positive number",
                "give the budget in seconds, more than 0",
            )


def timeout_excessive(task: LintTask) -> Iterator[Hit]:
    timeouts = _timeouts(task)
    for timeout in timeouts.values():
        seconds = number(timeout.value)
        if timeout.explicit and seconds is not None and seconds > MAX_TIMEOUT_SECONDS:
            yield Hit(
                task.config_name,
                timeout.line,
                f"{timeout.label} is {timeout.value:g} s, more than 24 h",
                "a stuck attempt holds a machine that long; give a realistic budget",
            )
    agent, verifier = timeouts["agent"], timeouts["verifier"]
    agent_seconds, verifier_seconds = number(agent.value), number(verifier.value)
    if (
        verifier.explicit
        and agent_seconds
        and verifier_seconds
        and 0 < agent_seconds * VERIFIER_TIMEOUT_FACTOR < verifier_seconds <= MAX_TIMEOUT_SECONDS
    ):
        yield Hit(
            task.config_name,
            verifier.line,
            f"{verifier.label} ({verifier_seconds:g} s) is more than 10 times "
            f"{agent.label} ({agent_seconds:g} s)",
            "scoring should not take much longer than the work it scores; check the units",
        )
