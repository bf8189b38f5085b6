"""What the loader returns: each Harbor task resolved to plain settings ageval can run.

Every layered value is final here (run overrides > job config > task.toml), timeouts are
Harbor's effective ones, and `${VAR}` templates are resolved from the host. Resolved env
values can be secrets: they are left out of `repr` and must not be written to results.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agevalx.formats.harbor.errors import HarborWarning, TaskFailure
from agevalx.formats.harbor.models import ArtifactConfig, HealthcheckConfig, VerifierEnvironmentMode

WorkdirSource = Literal["run", "task", "dockerfile"]


class RunOverrides(BaseModel):
    """The run's own settings (ageval's `--env-params`/execution params): they win over both
    the job config and task.toml."""

    model_config = ConfigDict(extra="forbid")

    image: str | None = None
    """Replaces every task's image (`setup.image`); Dockerfile WORKDIRs are then not used."""
    workdir: str | None = None
    """Working directory of every task (`setup.workdir`)."""
    cpus: int | float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None
    gpus: int | None = None
    environment_env: dict[str, str] = Field(default_factory=dict)
    """Over the job's `environment.env` and the task's `[environment.env]`."""
    agent_env: dict[str, str] = Field(default_factory=dict)
    """Over the job's `agents[0].env`."""
    evaluation_env_variables: dict[str, str] = Field(default_factory=dict)
    """Verifier variables: over the job's `verifier.env` and the task's `[verifier.env]`."""
    agent_timeout_sec: float | None = None
    """Replaces the base agent timeout (before Harbor's max and multiplier)."""
    verifier_timeout_sec: float | None = None
    """Replaces the base verifier timeout (before Harbor's max and multiplier)."""
    run_timeout_multiplier: float | None = None
    """`--execution-params`: multiplies the effective agent timeout (after the job config)."""
    select: list[str] | None = None
    """Exact task directory names to run (`--task`); an unknown name is an error."""


class Resources(BaseModel):
    """Resource limits after overrides; `None` means unlimited/unspecified."""

    model_config = ConfigDict(frozen=True)

    cpus: int | float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None
    gpus: int | None = None


class SeparateVerifierEnvironment(BaseModel):
    """The fresh container a `separate` verifier runs in (Harbor's definition rules)."""

    model_config = ConfigDict(frozen=True)

    image: str | None
    """Prebuilt image; `None` means build `build_context`/Dockerfile."""
    build_context: Path | None
    """Directory holding the Dockerfile to build when `image` is `None`."""
    bundled_tests: bool
    """The verifier image owns /tests: the task's tests/ is not uploaded."""
    own: EnvironmentSettings | None = None
    """`[verifier.environment]`'s workdir, resources and container env (with the job's and
    the run's overrides over them), which replace the task's; `None`: the task's apply."""


class EnvironmentSettings(BaseModel):
    """A container's settings after layering (run > job > the table that declares them)."""

    model_config = ConfigDict(frozen=True)

    workdir: str | None = None
    resources: Resources = Field(default_factory=Resources)
    environment_env: dict[str, str] = Field(default_factory=dict, repr=False)
    """Resolved container env (may hold secrets: never written to results)."""


class VerifierSpec(BaseModel):
    """How the task is verified."""

    model_config = ConfigDict(frozen=True)

    disabled: bool = False
    """Job `verifier.disable`: the task completes without a score."""
    timeout_sec: float = 600.0
    """Effective limit: min(override or task, max) x multiplier."""
    mode: VerifierEnvironmentMode = VerifierEnvironmentMode.SHARED
    separate: SeparateVerifierEnvironment | None = None
    """Set when `mode` is `separate`."""
    tests_dir: Path
    """The task's tests/ directory (uploaded to /tests)."""
    env: dict[str, str] = Field(default_factory=dict, repr=False)
    """Resolved variables of the test.sh command (a verifier class gets them as
    `override_env`)."""
    import_path: str | None = None
    """Job `verifier.import_path` (`module.path:ClassName`): a Harbor `BaseVerifier` class
    that replaces tests/test.sh (see agevalx/formats/harbor/plugin.py)."""
    class_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Job `verifier.kwargs`: extra keyword arguments of the verifier class."""


class HarborTaskSpec(BaseModel):
    """One resolved Harbor task."""

    model_config = ConfigDict(frozen=True)

    name: str
    """Task directory name: unique in the run, used by `--task`."""
    package_name: str | None = None
    """`[task].name` (org/name) when the task declares one."""
    dir: Path
    source: str | None = None
    """Name of the dataset directory the task came from (Harbor's `source`)."""
    image: str | None
    """Image to start; `None` means build `dockerfile`."""
    dockerfile: Path | None
    """environment/Dockerfile, when the image must be built from it."""
    build_timeout_sec: float = 600.0
    workdir: str | None
    """Working directory of every command; `None` means the image's WORKDIR."""
    workdir_source: WorkdirSource | None = None
    resources: Resources = Field(default_factory=Resources)
    gpu_types: tuple[str, ...] = ()
    """`[environment] gpu_types`: acceptable GPU models, checked against the engine's GPUs
    (any model when empty)."""
    environment_env: dict[str, str] = Field(default_factory=dict, repr=False)
    """Container environment of every command (task < job < run)."""
    agent_env: dict[str, str] = Field(default_factory=dict, repr=False)
    """Extra environment of the agent phase only (job `agents[0].env` < run)."""
    solution_env: dict[str, str] = Field(default_factory=dict, repr=False)
    """`[solution].env`: the oracle's solve.sh environment, over everything else."""
    agent_timeout_sec: float | None
    """Effective agent limit as Harbor computes it; `None` means none."""
    verifier: VerifierSpec
    healthcheck: HealthcheckConfig | None = None
    artifacts: list[ArtifactConfig] = Field(default_factory=list)
    """Task `[[artifacts]]` then the job's `artifacts`."""
    instruction: str
    """instruction.md without leading canary lines, plus the job's extra instructions."""
    upload_environment_dir: bool = False
    """Harbor copies environment/ into the workdir of a prebuilt image that has no
    Dockerfile or compose file there; `prepare_environment` does the same."""
    failure: TaskFailure | None = None
    """Set when the task fails without running (e.g. an unset `${VAR}`)."""


class HarborJob(BaseModel):
    """The load result: the tasks to run, in order, and what was reported."""

    model_config = ConfigDict(frozen=True)

    tasks: list[HarborTaskSpec]
    warnings: list[HarborWarning] = Field(default_factory=list)
    verification_disabled: bool = False
    """The job config's `verifier.disable`."""
