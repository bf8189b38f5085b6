"""The ageval format's loader: a dataset root (ageval.yaml) and its member tasks (task.yaml),
applying every rule of seed 000."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agevalx.cache.tree import IGNORED_NAMES
from agevalx.config.dataset import (
    ATTEMPT_KEYS,
    DATASET_FORMAT,
    FORBIDDEN_ROOT_KEYS,
    DatasetConfig,
)
from agevalx.config.loading import check_format, read_yaml_mapping, validate_model
from agevalx.config.secrets import reject_literal_secrets
from agevalx.errors import ConfigError

if TYPE_CHECKING:
    from agevalx.config.task import TaskConfig

DATASET_FILE = "ageval.yaml"
TASK_FILE = "task.yaml"
PROMPT_FILE = "prompts/task.md"
"""What the agent is given when the task has no run.py."""


@dataclass(frozen=True)
class TaskSource:
    """A member task: its directory and validated task.yaml."""

    task_id: str
    directory: Path
    config: TaskConfig
    display: str
    """The task directory as shown in messages (relative to the dataset's parent)."""

    def has(self, relative: str) -> bool:
        return (self.directory / relative).is_file()


def check_top_level(task_dir: Path, display: str) -> None:
    """Refuse top-level directories outside the member whitelist."""
    from agevalx.config.task import ALLOWED_TOP_LEVEL_DIRS

    for child in sorted(task_dir.iterdir()):
        if child.name in IGNORED_NAMES or not child.is_dir():
            continue
        if child.name not in ALLOWED_TOP_LEVEL_DIRS:
            allowed = ", ".join(sorted(ALLOWED_TOP_LEVEL_DIRS))
            raise ConfigError(
                "illegal_top_level_dir",
                f"the directory {child.name!r} is not allowed at a task's top level",
                file=f"{display}/{child.name}",
                hint=f"move it under one of: {allowed}",
            )


def _reject_keys(
    document: dict[str, Any], forbidden: dict[str, str], code: str, display: str
) -> None:
    for key, hint in forbidden.items():
        if key in document:
            raise ConfigError(
                code, f"the key {key!r} is not allowed here", file=display, field=key, hint=hint
            )
    for key in ATTEMPT_KEYS:
        if key in document:
            raise ConfigError(
                "always_k_cli_only",
                f"{key!r} cannot be set in a config file",
                file=display,
                field=key,
                hint="the number of attempts is chosen on the command line: ageval run ... -k N",
            )


@dataclass(frozen=True)
class DatasetFiles:
    """A validated dataset root: its ageval.yaml and the names of its tasks."""

    root: Path
    config: DatasetConfig
    display: str
    task_ids: tuple[str, ...]


def read_dataset(path: Path) -> DatasetFiles:
    """Read and validate a dataset root; lists its tasks without loading them."""
    display = path.as_posix().rstrip("/") or "."
    if not path.is_dir():
        raise ConfigError(
            "dataset_not_found",
            "the dataset directory does not exist",
            file=display,
            hint="pass the directory that holds ageval.yaml",
        )
    config_display = f"{display}/{DATASET_FILE}"
    document = read_yaml_mapping(path / DATASET_FILE, display=config_display)
    check_format(document, DATASET_FORMAT, config_display)
    _reject_keys(document, FORBIDDEN_ROOT_KEYS, "forbidden_root_key", config_display)
    reject_literal_secrets(document, config_display)
    config = validate_model(DatasetConfig, document, display=config_display)
    tasks_dir = path / config.tasks.root
    if tasks_dir.is_symlink() or not tasks_dir.resolve().is_relative_to(path.resolve()):
        raise ConfigError(
            "path_escape",
            "tasks.root leaves the dataset directory",
            file=config_display,
            field="tasks.root",
            hint="keep the tasks inside the dataset",
        )
    task_ids = tuple(
        sorted(
            child.name
            for child in (tasks_dir.iterdir() if tasks_dir.is_dir() else ())
            if child.is_dir() and not child.is_symlink() and not child.name.startswith((".", "_"))
        )
    )
    if not task_ids:
        raise ConfigError(
            "no_tasks",
            f"the dataset has no tasks under {config.tasks.root}/",
            file=config_display,
            field="tasks.root",
            hint=f"add {config.tasks.root}/<task_id>/task.yaml",
        )
    return DatasetFiles(root=path, config=config, display=display, task_ids=task_ids)


def read_task(dataset: DatasetFiles, task_id: str) -> TaskSource:
    """Read and validate one member task's task.yaml (the task id must be listed)."""
    # The task's models: only a task that is read (its lock is not cached) needs them.
    from agevalx.config.task import FORBIDDEN_TASK_KEYS, TASK_FORMAT, TaskConfig

    directory = dataset.root / dataset.config.tasks.root / task_id
    display = f"{dataset.display}/{dataset.config.tasks.root}/{task_id}"
    config_display = f"{display}/{TASK_FILE}"
    document = read_yaml_mapping(directory / TASK_FILE, display=config_display)
    check_format(document, TASK_FORMAT, config_display)
    _reject_keys(document, FORBIDDEN_TASK_KEYS, "forbidden_task_key", config_display)
    reject_literal_secrets(document, config_display)
    config = validate_model(TaskConfig, document, display=config_display)
    if config.task_id != task_id:
        raise ConfigError(
            "task_id_mismatch",
            f"task_id is {config.task_id!r} but the directory is {task_id!r}",
            file=config_display,
            field="task_id",
            hint="task_id must equal the directory name and --task",
        )
    check_top_level(directory, display)
    return TaskSource(task_id=task_id, directory=directory, config=config, display=display)
