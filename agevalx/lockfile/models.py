"""The lock document: a task's validated, fully resolved configuration plus every file's digest.

One model serves every task format: a common core (dataset, task, features, files, binding)
that the attempt runner and the evaluator read, and a per-format section (`harbor` for a
Harbor task) that only its format reads. The document is written as canonical JSON;
`config_digest` is the xxh3-128 of the canonical JSON of every other field, so two locks of
the same inputs are byte-identical.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    field_serializer,
    model_serializer,
)

from agevalx.config.task import Artifacts, Evaluation, Limits
from agevalx.formats.files import FileEntry
from agevalx.hashing import digest_json

FormatName = Literal["ageval", "harbor"]


class LockModel(BaseModel):
    # Validators are built on first use: a plan whose locks are all cached reads them as
    # JSON and builds none (building them cost a command ~15 ms of its start).
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class LockedDataset(LockModel):
    """The dataset the task belongs to."""

    dataset_id: str
    """From ageval.yaml (a Harbor dataset: `harbor/<directory>`)."""

    version: str
    """From ageval.yaml (`harbor` for a Harbor dataset)."""

    tasks_root: str
    """The tasks directory, relative to the dataset root."""

    max_concurrent_tasks: int
    """Resolved scheduler default."""


class LockedRole(LockModel):
    """A task role bound to an agent profile, with defaults resolved."""

    profile: str
    """The profile id it is bound to (`--agent` name, or the task's role id)."""

    executor: Literal["acp", "oracle", "harbor"]
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

    implementation: dict[str, str] | None = None
    """What runs the agent when the task image does not: the scripted agent's source digest,
    or an agent bundle's name and spec digest (absent from the document otherwise)."""

    @model_serializer(mode="wrap")
    def _without_empty_implementation(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("implementation") is None:
            data.pop("implementation", None)
        return data


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


class LockedRoleRef(LockModel):
    """A role of the task, by id."""

    id: str


class LockedTask(LockModel):
    """The task as locked: task.yaml with every default resolved (main_environment and
    cap_add left out), or a Harbor task seen as an ageval task (one role, its timeouts)."""

    format: Literal["ageval.task/1", "harbor"]
    """The task file's format."""

    task_id: str
    """The task."""

    description: str | None = None
    """task.yaml's description."""

    parameters: dict[str, Any] = {}
    """Values for run.py (`ctx.params`) and container settings."""

    agent_profiles: list[LockedRoleRef] = []
    """The task's roles."""

    limits: Limits = Limits()
    """Stage budgets and quotas."""

    artifacts: Artifacts = Artifacts()
    """Published outputs."""

    evaluation: Evaluation = Evaluation()
    """Scoring configuration."""

    provenance: dict[str, Any] | None = None
    """Where the task comes from."""


class ScoringImage(LockModel):
    """An image the task is scored in besides the attempt's own (an image node builds or
    pulls it): a Harbor task's separate verifier environment."""

    name: str
    """How the verifier asks for it (`verifier`)."""
    image: str | None = None
    """An image reference (pulled when the engine lacks it)."""
    context: str | None = None
    """Else a build context relative to the task directory, holding its Dockerfile."""


class HarborResources(LockModel):
    """A Harbor task's resources after the run's and the job's overrides."""

    cpus: int | float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None
    gpus: int | None = None


class HarborRunLock(LockModel):
    """What a Harbor task's run depends on beyond its files; env values only as digests."""

    image: str | None
    """environment.docker_image (or `setup.image`); None: environment/Dockerfile is built."""
    workdir: str | None
    """The agent's working directory; None: the image's WORKDIR."""
    resources: HarborResources
    agent_timeout_sec: float | None
    """Harbor's effective agent timeout; None: no limit."""
    build_timeout_sec: float
    environment_env: dict[str, str]
    """Container env: name -> digest of the value as written (a `${NAME}` template stays one)."""
    agent_env: dict[str, str]
    """The agent phase's env: name -> digest."""
    solution_env: dict[str, str]
    """`[solution].env` of the oracle: name -> digest."""
    instruction: str
    """Digest of the prompt (instruction.md plus the job's extra instructions)."""
    healthcheck: dict[str, Any] | None
    """`[environment.healthcheck]`."""
    upload_environment_dir: bool
    """environment/ is copied into the workdir (a prebuilt image without Dockerfile)."""
    dataset_name: str | None = None
    """`--dataset-name`: results are reused only under the same name (left out when unset,
    so the keys of runs without one stay as they were)."""

    @model_serializer(mode="wrap")
    def _without_unset_dataset_name(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("dataset_name") is None:
            data.pop("dataset_name", None)
        return data


class HarborVerifyLock(LockModel):
    """What a Harbor task's verifier depends on beyond tests/; env values only as digests."""

    disabled: bool
    timeout_sec: float
    mode: str
    """`shared` or `separate`."""
    separate: dict[str, Any] | None
    """The separate verifier environment (image or build context, settings)."""
    env: dict[str, str]
    """The verifier's env: name -> digest."""
    environment_env: dict[str, str]
    artifacts: list[dict[str, Any]]
    """`[[artifacts]]` and the job's `artifacts`."""
    import_path: str | None = None
    """A Harbor verifier class replacing tests/test.sh."""
    class_kwargs: str | None = None
    """Digest of the class's keyword arguments."""
    source: str | None = None
    """Digest of the class's module source."""


class HarborLock(LockModel):
    """The Harbor section of a Harbor task's lock."""

    workdir: str | None
    """The task's working directory, when it sets one."""
    verifier_disabled: bool
    verifier_mode: str
    healthcheck: bool
    run: HarborRunLock
    """Read by the run node's key."""
    verify: HarborVerifyLock
    """Read by the evaluate node's key."""


class TaskLock(LockModel):
    """One task's lock, whatever its format."""

    lock_schema: Literal["ageval.lock/1"] = "ageval.lock/1"
    """Lock schema version."""

    dataset: LockedDataset
    """Dataset identity and defaults."""

    task_id: str
    """The task."""

    task: LockedTask
    """The task's resolved configuration (the core every format fills)."""

    features: LockedFeatures
    """Optional files present."""

    files: dict[str, FileEntry]
    """Every task file (relative path -> digest, size, mode)."""

    binding: LockedBinding
    """Agents and environment."""

    overrides: dict[str, str]
    """Command-line overrides that shaped this lock (`agent`, `model`, `fork_model`)."""

    scoring_image: ScoringImage | None = None
    """The image scoring needs besides the attempt's (absent from the document when none)."""

    harbor: HarborLock | None = None
    """The Harbor section; None (and absent from the document) for an ageval task."""

    config_digest: str
    """xxh3-128 of the canonical JSON of every other field."""

    @property
    def format(self) -> FormatName:
        """The task format that reads this lock's per-format section."""
        return "harbor" if self.harbor is not None else "ageval"

    @field_serializer("task")
    def _task_as_written(self, task: LockedTask) -> dict[str, Any]:
        return task.model_dump(mode="json", exclude_none=True)

    def document(self) -> dict[str, Any]:
        """The lock as canonical-JSON-ready data (the format section only when present)."""
        data = self.model_dump(mode="json")
        for optional in ("scoring_image", "harbor"):
            if data[optional] is None:
                del data[optional]
        return data

    @classmethod
    def signed(cls, **body: Any) -> TaskLock:
        """A lock of `body` (every field but `config_digest`) with its digest computed."""
        unsigned = cls.model_validate({**body, "config_digest": ""}).document()
        del unsigned["config_digest"]
        return cls.model_validate({**body, "config_digest": digest_json(unsigned)})


def parse_lock(document: dict[str, Any]) -> TaskLock:
    """A lock document as its model."""
    return TaskLock.model_validate(document)
