"""A Harbor task directory on disk: task.toml, instruction.md, environment/, tests/.

`is_harbor_task` decides as Harbor's `Task.is_valid_dir` does.
"""

from __future__ import annotations

import os
import posixpath
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agevalx.errors import AgevalError
from agevalx.formats.harbor import errors
from agevalx.formats.harbor.errors import HarborError, HarborWarning
from agevalx.formats.harbor.models import TaskOS, TaskToml
from agevalx.fsutil import read_limited

TEXT_LIMIT = 4 << 20
"""Bytes of a task's text file (task.toml, instruction.md) read at most."""
CONFIG = "task.toml"
INSTRUCTION = "instruction.md"
DOCKERFILE = "Dockerfile"
COMPOSE = "docker-compose.yaml"
_CANARY = re.compile(r"^(<!--.*canary.*-->|#.*canary.*)$", re.IGNORECASE)


def read_toml(task_dir: Path) -> dict[str, Any]:
    """The parsed task.toml (a coded `harbor_task_invalid` when it cannot be read)."""
    path = task_dir / CONFIG
    try:
        text = read_limited(path, TEXT_LIMIT).decode("utf-8")
        return tomllib.loads(text)
    except AgevalError as exc:
        raise HarborError(
            errors.TASK_INVALID, f"cannot read task.toml: {exc.message}", file=str(path)
        ) from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise HarborError(
            errors.TASK_INVALID, f"cannot read task.toml: {exc}", file=str(path)
        ) from None


def read_task_text(path: Path) -> str:
    """A text file of a task (instruction.md, an extra instruction), at most `TEXT_LIMIT`
    bytes of a regular file; anything else is `harbor_task_invalid`."""
    try:
        return read_limited(path, TEXT_LIMIT).decode("utf-8")
    except AgevalError as exc:
        raise HarborError(errors.TASK_INVALID, exc.message, file=str(path), hint=exc.hint) from None
    except UnicodeDecodeError as exc:
        raise HarborError(
            errors.TASK_INVALID, f"{path.name} is not UTF-8: {exc}", file=str(path)
        ) from None


def parse_task_toml(task_dir: Path, raw: dict[str, Any]) -> TaskToml:
    try:
        return TaskToml.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise HarborError(
            errors.TASK_INVALID,
            f"task.toml is not valid for Harbor: {first['msg']}",
            file=str(task_dir / CONFIG),
            field=".".join(str(part) for part in first["loc"]) or None,
        ) from None


def _inside(path: Path, root: Path) -> bool:
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(root))


def _tree_inside(directory: Path, root: Path) -> bool:
    """No file of tests/ or solution/ may resolve outside the task (Harbor's path safety)."""
    if not directory.exists() and not directory.is_symlink():
        return True
    if not _inside(directory, root):
        return False
    for current, dirnames, filenames in os.walk(directory):
        for name in (*dirnames, *filenames):
            if not _inside(Path(current) / name, root):
                return False
    return True


def find_test_script(task_dir: Path) -> Path | None:
    """tests/test.sh when it exists (Linux tasks use `.sh` only)."""
    path = task_dir / "tests" / "test.sh"
    return path if path.exists() else None


def _bundled_verifier_tests(config: TaskToml, task_dir: Path) -> bool:
    """A separate verifier image that owns /tests needs no tests/test.sh on the host."""
    if config.verifier.mode.value != "separate":
        return False
    own = config.verifier.environment
    if own is not None and own.docker_image:
        return True
    tests = task_dir / "tests"
    return any((tests / name).is_file() for name in (DOCKERFILE, COMPOSE))


def _steps_valid(config: TaskToml, task_dir: Path, disable_verification: bool) -> bool:
    for step in config.steps or []:
        step_dir = task_dir / "steps" / step.name
        if not (step_dir / INSTRUCTION).exists():
            return False
        if disable_verification:
            continue
        tests = (step_dir / "tests" / "test.sh", task_dir / "tests" / "test.sh")
        if not any(path.exists() for path in tests):
            return False
    return True


def _not_a_task(directory: Path, why: str) -> HarborError:
    return HarborError(
        errors.NOT_A_TASK,
        f"{directory} is not a Harbor task: {why}",
        file=str(directory / CONFIG),
        hint="a task has task.toml, instruction.md, environment/ (or docker_image) and "
        "tests/test.sh",
    )


def task_problem(directory: Path, *, disable_verification: bool = False) -> HarborError | None:
    """Why Harbor would not load `directory` as a task (`Task.is_valid_dir`), as a coded
    error: task.toml that does not parse or is not valid (`harbor_task_invalid`, naming the
    problem), or a missing part (`harbor_not_a_task`); `None` for a task."""
    if not (directory / CONFIG).is_file():
        return _not_a_task(directory, "it has no task.toml")
    try:
        config = parse_task_toml(directory, read_toml(directory))
    except HarborError as exc:
        return exc
    if not config.environment.docker_image and not (directory / "environment").is_dir():
        return _not_a_task(directory, "no environment/ directory and no docker_image")
    root = directory.resolve()
    if not all(_tree_inside(directory / part, root) for part in ("tests", "solution")):
        return _not_a_task(directory, "tests/ or solution/ leads outside the task")
    if config.steps:
        if _steps_valid(config, directory, disable_verification):
            return None
        return _not_a_task(directory, "a step lacks its instruction.md or test.sh")
    if not (directory / INSTRUCTION).exists():
        return _not_a_task(directory, f"it has no {INSTRUCTION}")
    if disable_verification or _bundled_verifier_tests(config, directory):
        return None
    if config.environment.os == TaskOS.WINDOWS:
        found = (directory / "tests" / "test.bat").exists()
        return None if found else _not_a_task(directory, "it has no tests/test.bat")
    found = find_test_script(directory) is not None
    return None if found else _not_a_task(directory, "it has no tests/test.sh")


def is_harbor_task(task_dir: Path | str, *, disable_verification: bool = False) -> bool:
    """Whether Harbor would load `task_dir` as a task (`Task.is_valid_dir`).

    A task has task.toml (valid for Harbor), an environment/ directory unless it names a
    `docker_image`, tests/ and solution/ that stay inside it, instruction.md, and, unless
    verification is disabled or a separate verifier image owns /tests, tests/test.sh.
    """
    return task_problem(Path(task_dir), disable_verification=disable_verification) is None


def declares_task(directory: Path) -> bool:
    """`directory` holds a task.toml (a Harbor task, or meant to be one)."""
    return (directory / CONFIG).is_file()


def children_tasks(
    directory: Path, *, disable_verification: bool = False
) -> tuple[list[Path], list[HarborError]]:
    """The task children of a dataset directory, sorted, as `harbor run -p` lists them; and
    why each child that has a task.toml is not a task (Harbor skips those silently)."""
    tasks: list[Path] = []
    skipped: list[HarborError] = []
    for child in sorted(directory.iterdir()):
        if not child.is_dir():
            continue
        problem = task_problem(child, disable_verification=disable_verification)
        if problem is None:
            tasks.append(child)
        elif declares_task(child):
            skipped.append(problem)
    return tasks, skipped


def skipped_warning(problem: HarborError) -> HarborWarning:
    """The report of a directory with a task.toml that is skipped as not a task."""
    return HarborWarning(
        code=errors.TASK_SKIPPED,
        message=f"skipped, not a task: {problem.message}",
        file=problem.file,
        field=problem.field,
    )


def strip_canary(text: str) -> str:
    """Drop leading canary comment lines and the blank lines after them (Harbor)."""
    lines = text.split("\n")
    index = 0
    while index < len(lines) and _CANARY.match(lines[index].strip()):
        index += 1
    while index < len(lines) and lines[index].strip() == "":
        index += 1
    return "\n".join(lines[index:])


def _instructions(text: str) -> list[tuple[str, str]]:
    """(KEYWORD, argument) of each Dockerfile instruction, continuations joined."""
    result: list[tuple[str, str]] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        full = (pending + stripped).strip()
        pending = ""
        keyword, _, argument = full.partition(" ")
        result.append((keyword.upper(), argument.strip()))
    return result


def dockerfile_workdir(text: str) -> str | None:
    """The last literal `WORKDIR` of a Dockerfile (none with a `$` variable counts).

    A relative WORKDIR joins the previous literal one (or `/`), as Docker resolves it.
    """
    current: str | None = None
    for keyword, argument in _instructions(text):
        if keyword != "WORKDIR" or not argument:
            continue
        value = argument
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        if "$" in value:
            continue
        current = posixpath.normpath(posixpath.join(current or "/", value))
    return current
