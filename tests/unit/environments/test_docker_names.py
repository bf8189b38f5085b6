"""`docker_name`: every Docker name ageval derives from a task id follows Docker's rules."""

from __future__ import annotations

import re

import pytest

from agevalx.environments.names import MAX_LENGTH, docker_name

pytestmark = pytest.mark.unit

RULES = {
    "container": re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]*"),
    "tag": re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"),
    "project": re.compile(r"[a-z0-9][a-z0-9_-]*"),
}

HOSTILE = [
    "täsk-ü-0",
    "日本語-0",
    "-leading-dash",
    ".hidden",
    "spaces and/slashes:colons",
    "x" * 300,
    "ü" * 200,
    "emoji-🙂-1",
    "a\udcff-lone-surrogate",
    "",
]


@pytest.mark.parametrize("rule", sorted(RULES))
@pytest.mark.parametrize("text", HOSTILE)
def test_a_hostile_id_becomes_a_valid_name(rule: str, text: str) -> None:
    name = docker_name(text, rule)  # type: ignore[arg-type]
    assert RULES[rule].fullmatch(name), name
    assert len(name) <= MAX_LENGTH


@pytest.mark.parametrize("text", ["echo-pass-0", "eval-task_1.2-0-0123456789ab", "a"])
def test_a_valid_name_is_kept_as_it_is(text: str) -> None:
    assert docker_name(text) == text
    assert docker_name(text, "tag") == text


def test_names_stay_readable_and_distinct() -> None:
    name = docker_name("täsk-ü-0")
    assert name.startswith("task-u-0-")
    assert docker_name("täsk-ü-0") == name  # stable: the same id, the same name
    assert docker_name("täsk-u-0") != name
    assert docker_name("task-ü-0") != name
    assert docker_name("x" * 300) != docker_name("x" * 301)
    assert docker_name("Upper", "project") != docker_name("upper", "project")
