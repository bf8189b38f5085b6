"""`ageval.yaml`, the dataset root file (`format: ageval.dataset/1`)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, field_validator

from agevalx.config.common import StrictModel, coded, relative_path

DATASET_FORMAT = "ageval.dataset/1"
DATASET_ID = re.compile(r"^[a-z0-9]([a-z0-9._/-]*[a-z0-9])?$")
FORBIDDEN_ROOT_KEYS = {
    "harness": "the harness is chosen per run, not per dataset",
    "provider": "providers are bound in profiles.yaml",
    "limits": "limits belong to each task's task.yaml",
    "evaluation": "evaluation belongs to each task's task.yaml",
    "agent_profiles": "agents are bound in the root profiles.yaml",
}
ATTEMPT_KEYS = ("n_attempts", "k", "attempts", "always_k")


def _version_text(value: Any) -> Any:
    # `version: 3` is common; a float such as 1.10 would silently become "1.1", so only ints.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


class TasksSection(StrictModel):
    """Where the member tasks live."""

    root: str = "tasks"
    """Directory holding one sub-directory per task, relative to the dataset root."""

    @field_validator("root")
    @classmethod
    def _inside(cls, value: str) -> str:
        return relative_path(value, what="tasks.root")


class Defaults(StrictModel):
    """Dataset-wide defaults; only the scheduler's concurrency may be set here."""

    max_concurrent_tasks: int = Field(default=1, ge=1)
    """How many attempts may run at once on one machine."""


class DatasetConfig(StrictModel):
    """The dataset root file, `ageval.yaml`."""

    format: Literal["ageval.dataset/1"]
    """Always `ageval.dataset/1`."""

    dataset_id: str
    """1-128 characters of `[a-z0-9._/-]`, starting and ending alphanumeric; no `..` or `//`.
    `org/name` is recommended."""

    version: Annotated[str, BeforeValidator(_version_text), Field(min_length=1)]
    """The dataset's version; any non-empty string."""

    tasks: TasksSection = TasksSection()
    """Where the tasks are."""

    defaults: Defaults = Defaults()
    """Dataset-wide defaults."""

    @field_validator("dataset_id")
    @classmethod
    def _dataset_id(cls, value: str) -> str:
        hint = "use 1-128 characters of a-z 0-9 . _ / -, such as 'acme/terminal-tasks'"
        if not 1 <= len(value) <= 128:
            raise coded("invalid_dataset_id", f"dataset_id has {len(value)} characters", hint)
        if DATASET_ID.fullmatch(value) is None:
            raise coded("invalid_dataset_id", f"dataset_id {value!r} has a bad shape", hint)
        if ".." in value or "//" in value:
            raise coded("invalid_dataset_id", f"dataset_id {value!r} contains '..' or '//'", hint)
        return value
