"""`is_harbor_task` as Harbor decides, Dockerfile WORKDIR, canary stripping."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agevalx.formats.harbor import is_harbor_task
from agevalx.formats.harbor.taskdir import dockerfile_workdir, strip_canary
from tests.unit.harbor.builders import BASE_TOML, TaskFactory

pytestmark = pytest.mark.unit


def test_a_complete_task_is_a_task(make_task: TaskFactory) -> None:
    assert is_harbor_task(make_task())


@pytest.mark.parametrize("missing", ["task.toml", "instruction.md", "tests/test.sh"])
def test_missing_files_make_no_task(make_task: TaskFactory, missing: str) -> None:
    assert not is_harbor_task(make_task(files={missing: None}))


def test_without_docker_image_an_environment_dir_is_needed(make_task: TaskFactory) -> None:
    assert not is_harbor_task(make_task("a", toml="[agent]\n"))
    with_dir = make_task("b", toml="[agent]\n", files={"environment/Dockerfile": "FROM x\n"})
    assert is_harbor_task(with_dir)


def test_invalid_toml_or_schema_makes_no_task(make_task: TaskFactory) -> None:
    assert not is_harbor_task(make_task("a", toml="[agent\n"))
    assert not is_harbor_task(make_task("b", toml=BASE_TOML + "cpus = 'many'\n"))


def test_unknown_keys_do_not_matter(make_task: TaskFactory) -> None:
    assert is_harbor_task(make_task(toml=BASE_TOML + "\n[whatever]\nx = 1\n"))


def test_disabled_verification_needs_no_tests(make_task: TaskFactory) -> None:
    task = make_task(files={"tests/test.sh": None})
    assert not is_harbor_task(task)
    assert is_harbor_task(task, disable_verification=True)


def test_bundled_verifier_image_needs_no_test_script(make_task: TaskFactory) -> None:
    toml = BASE_TOML + '\n[verifier.environment]\ndocker_image = "grader"\n'
    assert is_harbor_task(make_task(toml=toml, files={"tests/test.sh": None}))


def test_tests_escaping_the_task_make_no_task(make_task: TaskFactory, tmp_path: Path) -> None:
    task = make_task()
    outside = tmp_path / "secret.txt"
    outside.write_text("x")
    os.symlink(outside, task / "tests" / "leak.txt")
    assert not is_harbor_task(task)


def test_steps_tasks_are_tasks_when_their_steps_are_complete(make_task: TaskFactory) -> None:
    toml = BASE_TOML + '\n[[steps]]\nname = "one"\n'
    assert not is_harbor_task(make_task("a", toml=toml))
    assert is_harbor_task(make_task("b", toml=toml, files={"steps/one/instruction.md": "x"}))


@pytest.mark.parametrize(
    ("dockerfile", "workdir"),
    [
        ("FROM x\n", None),
        ("FROM x\nWORKDIR /app\n", "/app"),
        ("FROM x\nworkdir /a\nWORKDIR b/c\n", "/a/b/c"),
        ("FROM x\nWORKDIR rel\n", "/rel"),
        ('FROM x\nWORKDIR "/quoted dir"\n', "/quoted dir"),
        ("FROM x\nWORKDIR /app\nWORKDIR ${HOME}\n", "/app"),
        ("FROM x\n# WORKDIR /commented\nWORKDIR /real/../real2\n", "/real2"),
        ("FROM x\nRUN a \\\n  WORKDIR /not\nWORKDIR \\\n  /joined\n", "/joined"),
    ],
)
def test_dockerfile_workdir(dockerfile: str, workdir: str | None) -> None:
    assert dockerfile_workdir(dockerfile) == workdir


def test_strip_canary() -> None:
    text = "<!-- BENCHMARK canary GUID x -->\n# canary again\n\n\nReal.\n# canary kept\n"
    assert strip_canary(text) == "Real.\n# canary kept\n"
    assert strip_canary("No canary.\n") == "No canary.\n"
