"""The dataset as the checks see it: its tasks, read with the formats' own readers but
tolerantly, so that one broken task is a finding and never stops the lint.

Nothing here builds an image, starts a container or reaches the network.
"""

from __future__ import annotations

import posixpath
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, cached_property, partial
from pathlib import Path
from typing import Any, Literal

from agevalx.config.loading import read_yaml_mapping
from agevalx.environments.compose import COMPOSE_FILES
from agevalx.errors import AgevalError, ConfigError
from agevalx.formats import lint_reading
from agevalx.formats.ageval.loader import PROMPT_FILE, TASK_FILE, read_dataset, read_task
from agevalx.formats.base import LintReading
from agevalx.fsutil import read_limited

Format = Literal["ageval", "harbor"]
TEXT_LIMIT = 4 << 20
"""Bytes of a file the checks read at most; a larger file is only measured."""
PROFILES_FILE = "profiles.yaml"


@cache
def harbor() -> LintReading:
    """How Harbor tasks are read (the format's module loads on first use)."""
    return lint_reading("harbor")


@dataclass
class LintTask:
    """One task directory of the dataset and what the checks read of it, each file once."""

    task_id: str
    """The task's directory name, its id in both formats."""
    directory: Path
    relative: str
    """The directory relative to the dataset root, as findings name files."""
    format: Format
    load: Callable[[], object]
    """The format's own reader of the task; raises the coded error it would stop a run with."""
    _texts: dict[str, str | None] = field(default_factory=dict)

    @property
    def config_name(self) -> str:
        return TASK_FILE if self.format == "ageval" else harbor().config_file

    @property
    def instruction_name(self) -> str:
        """The file the agent's task is written in (an ageval task's when it has no run.py)."""
        return PROMPT_FILE if self.format == "ageval" else harbor().instruction_file

    def path(self, name: str) -> str:
        """`name` (relative to the task; "" for the directory) as a finding shows it."""
        if not name:
            return self.relative if self.relative != "." else self.directory.name
        return f"{self.relative}/{name}" if self.relative != "." else name

    def text(self, name: str) -> str | None:
        """The UTF-8 text of the task's file `name`; None when it is missing, not a regular
        file, larger than `TEXT_LIMIT` or not text."""
        if name not in self._texts:
            self._texts[name] = read_text(self.directory / name)
        return self._texts[name]

    @cached_property
    def config(self) -> dict[str, Any] | None:
        """task.yaml or task.toml as parsed, before any validation; None when it does not
        parse (the `task_unreadable` check says why)."""
        try:
            if self.format == "ageval":
                return read_yaml_mapping(self.directory / TASK_FILE, display=TASK_FILE)
            text = self.text(harbor().config_file)
            return None if text is None else tomllib.loads(text)
        except (AgevalError, tomllib.TOMLDecodeError):
            return None

    @cached_property
    def files(self) -> list[str]:
        """Every regular file of the task, relative to it, sorted (links are not followed)."""
        found: list[str] = []
        for path in sorted(self.directory.rglob("*")):
            if path.is_file() and not path.is_symlink() and "__pycache__" not in path.parts:
                found.append(path.relative_to(self.directory).as_posix())
        return found

    @cached_property
    def compose_file(self) -> str | None:
        for name in COMPOSE_FILES:
            if (self.directory / "environment" / name).is_file():
                return f"environment/{name}"
        return None

    @cached_property
    def compose(self) -> tuple[str, str, dict[str, Any]] | None:
        """(file, text, services) of the task's compose file, when it parses."""
        name = self.compose_file
        if name is None:
            return None
        text = self.text(name)
        try:
            document = read_yaml_mapping(self.directory / name, display=name)
        except AgevalError:
            return None
        services = document.get("services")
        if text is None or not isinstance(services, dict):
            return None
        return name, text, services


@dataclass
class LintSource:
    """A dataset opened for linting."""

    root: Path
    display: str
    format: Format
    tasks: list[LintTask]
    dataset_files: list[str]
    """Dataset-level files the checks read (ageval.yaml, profiles.yaml), relative to root."""

    def text(self, name: str) -> str | None:
        return read_text(self.root / name)


def read_text(path: Path) -> str | None:
    try:
        return read_limited(path, TEXT_LIMIT).decode("utf-8")
    except (AgevalError, UnicodeDecodeError):
        return None


def line_of(text: str | None, pattern: str) -> int | None:
    """The 1-based number of the first line of `text` that matches `pattern`."""
    if text is None:
        return None
    compiled = re.compile(pattern)
    for number, line in enumerate(text.splitlines(), start=1):
        if compiled.search(line):
            return number
    return None


def open_source(path: Path) -> LintSource:
    """The dataset at `path`: an ageval dataset (ageval.yaml, read and validated by the
    format's reader), a Harbor task, or a directory of Harbor tasks. Raises the usual coded
    errors for a directory that is none of them."""
    display = path.as_posix().rstrip("/") or "."
    if not path.is_dir():
        raise ConfigError(
            "dataset_not_found",
            "the dataset directory does not exist",
            file=display,
            hint="pass the directory that holds ageval.yaml or Harbor tasks",
        )
    if (path / "ageval.yaml").exists():
        files = read_dataset(path)
        tasks_root = files.config.tasks.root
        tasks = [
            LintTask(
                task_id,
                path / tasks_root / task_id,
                posixpath.normpath(f"{tasks_root}/{task_id}"),
                "ageval",
                partial(read_task, files, task_id),
            )
            for task_id in files.task_ids
        ]
        profiles = [PROFILES_FILE] if (path / PROFILES_FILE).is_file() else []
        return LintSource(path, display, "ageval", tasks, ["ageval.yaml", *profiles])
    declares_task = harbor().declares_task
    if declares_task(path):
        return LintSource(path, display, "harbor", [_harbor_task(path, ".")], [])
    children = sorted(child for child in path.iterdir() if child.is_dir() and declares_task(child))
    if not children:
        raise ConfigError(
            "lint_not_a_dataset",
            "the directory holds neither ageval.yaml nor Harbor tasks (task.toml)",
            file=display,
            hint="pass an ageval dataset (ageval.yaml) or a Harbor task or directory of tasks",
        )
    tasks = [_harbor_task(child, child.name) for child in children]
    return LintSource(path, display, "harbor", tasks, [])


def _harbor_task(directory: Path, relative: str) -> LintTask:
    load = partial(harbor().load_task, directory)
    return LintTask(directory.name, directory, relative, "harbor", load)
