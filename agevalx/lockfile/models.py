"""The lock document: a task's fully resolved configuration plus the digest of every file.

It is written as canonical JSON; `config_digest` is the xxh3-128 of the canonical JSON of
every other field, so two locks of the same inputs are byte-identical.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from agevalx.dataset.files import FileEntry


class LockModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class LockedDataset(LockModel):
    """The dataset the task belongs to."""

    dataset_id: str
    """From ageval.yaml."""

    version: str
    """From ageval.yaml."""

    tasks_root: str
    """The tasks directory, relative to the dataset root."""

    max_concurrent_tasks: int
    """Resolved scheduler default."""


class LockedRole(LockModel):
    """A task role bound to an agent profile, with defaults resolved."""

    profile: str
    """The profile id it is bound to (`--agent` name, or the task's role id)."""

    executor: Literal["acp", "oracle"]
    """How the role is executed."""

    label: str
    """Display name."""

    entry: str | None
    """ACP agent program."""

    api_key: str | None
    """A `${VAR}` reference, never a value."""

    base_url: str | None
    """The model endpoint."""

    model: dict[str, Any] | None
    """The model block with `reasoning.effort: max` resolved; omitted fields stay omitted."""

    options: dict[str, Any]
    """Executor options with defaults (upstream_stall_seconds)."""

    extensions: list[str]
    """Plugin names."""

    overlays: dict[str, str]
    """Overlay file path -> digest."""


class LockedBinding(LockModel):
    """The job binding: environment, options and roles."""

    source: Literal["profiles", "agent"]
    """`profiles`: from a profiles file; `agent`: from `--agent`."""

    profiles_file: str | None
    """The profiles file used, as given (secret references only)."""

    environment: Literal["docker"]
    """The environment provider."""

    environment_options: dict[str, Any]
    """Attempt environment options (cap_add and main_environment are never locked)."""

    evaluate_host: dict[str, Any]
    """Scoring host, with inherited platform / user / python_version resolved."""

    roles: dict[str, LockedRole]
    """Task role id -> bound profile."""


class LockedFeatures(LockModel):
    """Which optional task files exist (each changes how the attempt runs)."""

    run_py: bool
    evaluator_py: bool
    dockerfile: bool
    setup_sh: bool
    compose: bool
    solution: bool


class TaskLock(LockModel):
    """One task's lock."""

    lock_schema: Literal["ageval.lock/1"] = "ageval.lock/1"
    """Lock schema version."""

    dataset: LockedDataset
    """Dataset identity and defaults."""

    task_id: str
    """The task."""

    task: dict[str, Any]
    """task.yaml with every default resolved (main_environment and cap_add left out)."""

    features: LockedFeatures
    """Optional files present."""

    files: dict[str, FileEntry]
    """Every task file (relative path -> digest, size, mode)."""

    binding: LockedBinding
    """Agents and environment."""

    overrides: dict[str, str]
    """Command-line overrides that shaped this lock (`agent`, `model`)."""

    config_digest: str
    """xxh3-128 of the canonical JSON of every other field."""

    def document(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class HarborTaskLock(LockModel):
    """A Harbor task's lock: what the run, evaluate and summary keys read, and no secret."""

    lock_schema: Literal["ageval.lock/1"] = "ageval.lock/1"
    """Lock format version."""
    dataset: dict[str, Any]
    """The Harbor dataset's id (`harbor/<directory>`)."""
    task_id: str
    """The task directory's name."""
    task: dict[str, Any]
    """The task seen as an ageval task: its role and limits (Harbor's timeouts)."""
    features: dict[str, bool]
    """Which task files exist; `harbor` is true."""
    files: dict[str, str]
    """Path -> content digest of every task file (`+x` for executables)."""
    binding: dict[str, Any]
    """The agent bound with `--agent`, and the task image."""
    harbor: dict[str, Any]
    """Workdir, verifier mode, and the `run` and `verify` settings that enter the run and
    evaluate keys (env values as digests, `${NAME}` templates unresolved)."""
    overrides: dict[str, str]
    """Command-line overrides that shaped this lock (`agent`, `model`)."""
    config_digest: str
    """Digest of everything above."""


def parse_lock(document: dict[str, Any]) -> TaskLock | HarborTaskLock:
    """A lock document as its model: a Harbor task's, or an ageval task's."""
    if (document.get("features") or {}).get("harbor"):
        return HarborTaskLock.model_validate(document)
    return TaskLock.model_validate(document)
