"""Pydantic models of Harbor's task.toml and job config, as Harbor 0.26 reads them.

Unknown keys are ignored, as in Harbor (its models keep pydantic's default `extra="ignore"`);
the loader still reports them. Legacy spellings Harbor migrates are migrated the same way:
a root `version` becomes `schema_version`, `[environment] memory`/`storage` strings
("2G", "512M") become `memory_mb`/`storage_mb`, and `allow_internet` becomes `network_mode`.
"""

from __future__ import annotations

import math
from enum import StrEnum
from pathlib import PurePosixPath
from typing import Annotated, Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

from agevalx.config.common import MAX_SECONDS

_IGNORE = ConfigDict(extra="ignore")

Seconds = Annotated[float, Field(ge=0, le=MAX_SECONDS, allow_inf_nan=False)]
"""A duration: finite, not negative, at most a year (Harbor takes any float; `inf`, `nan` and
1e999 are refused here instead of failing later)."""
Multiplier = Annotated[float, Field(ge=0, allow_inf_nan=False)]
"""A timeout multiplier: finite and not negative (the product is capped, see
`effective_timeout`)."""


class NetworkMode(StrEnum):
    """Network access policy of an environment or phase."""

    NO_NETWORK = "no-network"
    PUBLIC = "public"
    ALLOWLIST = "allowlist"


class TaskOS(StrEnum):
    """Operating system of the task container; ageval runs Linux tasks only."""

    LINUX = "linux"
    WINDOWS = "windows"


class VerifierEnvironmentMode(StrEnum):
    """Whether the verifier runs in the agent's container or a fresh one."""

    SHARED = "shared"
    SEPARATE = "separate"


class PackageInfo(BaseModel):
    """The `[task]` table: registry package metadata (not needed to run)."""

    model_config = _IGNORE

    name: str
    """Package name, `org/name`."""
    version: str | None = None
    description: str = ""
    authors: list[dict[str, Any]] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)


class HealthcheckConfig(BaseModel):
    """`[environment.healthcheck]`: Docker HEALTHCHECK-style readiness check."""

    model_config = _IGNORE

    command: str
    """Shell command; exit 0 means healthy."""
    interval_sec: Seconds = 5.0
    """Seconds between checks once the start period is over."""
    timeout_sec: Seconds = 30.0
    """Limit of one check; a check that times out fails the healthcheck at once (Harbor)."""
    start_period_sec: Seconds = 0.0
    """Grace period after start: failures in it do not count."""
    start_interval_sec: Seconds = 5.0
    """Seconds between checks during the start period."""
    retries: int = Field(default=3, ge=0)
    """Consecutive failures (after the start period) that fail the healthcheck."""


def _size_to_mb(text: str) -> int:
    size = text.strip().upper()
    units = {"G": 1024.0, "M": 1.0, "K": 1 / 1024}
    if size[-1:] not in units:
        raise ValueError(f"invalid size {text!r}: expected e.g. '1G' or '512M'")
    return int(float(size[:-1]) * units[size[-1]])


class EnvironmentConfig(BaseModel):
    """`[environment]` (and `[verifier.environment]`): image, resources, env, readiness."""

    model_config = _IGNORE

    build_timeout_sec: Seconds = 600.0
    """Limit of building environment/Dockerfile (times the build multiplier)."""
    docker_image: str | None = None
    """Prebuilt image; without it the image is built from environment/Dockerfile."""
    os: TaskOS = TaskOS.LINUX
    """Container OS; `windows` is refused by ageval."""
    cpus: int | float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None
    gpus: int | None = None
    gpu_types: list[str] | None = None
    """Acceptable GPU types (not applied by ageval: reported)."""
    tpu: dict[str, Any] | None = None
    """TPU slice (not applied: reported)."""
    mcp_servers: list[dict[str, Any]] = Field(default_factory=list)
    """MCP servers offered to the agent (not applied: reported)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Container environment; `${VAR}` and `${VAR:-default}` resolve from the host."""
    skills_dir: str | None = None
    """Skills directory in the environment (not applied: reported)."""
    healthcheck: HealthcheckConfig | None = None
    workdir: str | None = None
    """Working directory of every command; overrides the image's WORKDIR."""
    network_mode: NetworkMode = NetworkMode.PUBLIC
    """Network policy (ageval's own network settings apply: a non-public mode is reported)."""
    allowed_hosts: list[str] | None = None
    """Hosts reachable under `network_mode = "allowlist"` (reported)."""
    allow_internet: bool | None = Field(default=None, exclude=True)
    """Deprecated spelling of `network_mode`; migrated on load."""

    @field_validator("cpus")
    @classmethod
    def _finite_cpus(cls, value: int | float | None) -> int | float | None:
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError(f"cpus must be a finite number; got {value}")
            if value.is_integer():
                return int(value)
        return value

    @field_validator("os", mode="before")
    @classmethod
    def _lower_os(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @model_validator(mode="before")
    @classmethod
    def _migrate_legacy(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for legacy, current in (("memory", "memory_mb"), ("storage", "storage_mb")):
            if legacy in data:
                value = data.pop(legacy)
                if isinstance(value, str):
                    converted = _size_to_mb(value)
                    if current in data and data[current] != converted:
                        raise ValueError(f"conflicting {legacy!r} and {current!r} values")
                    data.setdefault(current, converted)
        return data

    @model_validator(mode="after")
    def _migrate_allow_internet(self) -> EnvironmentConfig:
        explicit = "network_mode" in self.model_fields_set or self.allowed_hosts is not None
        if self.allow_internet is not None and not explicit:
            self.network_mode = (
                NetworkMode.PUBLIC if self.allow_internet else NetworkMode.NO_NETWORK
            )
        self.allow_internet = None
        return self


class AgentConfig(BaseModel):
    """`[agent]`: the agent phase."""

    model_config = _IGNORE

    timeout_sec: Seconds | None = None
    """Agent time limit; none means no limit (Harbor 0.26 has no default)."""
    user: str | int | None = None
    """User the agent runs as; none means the image's default user."""
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None


class VerifierConfig(BaseModel):
    """`[verifier]`: how tests/test.sh grades the attempt."""

    model_config = _IGNORE

    timeout_sec: Seconds = 600.0
    """Verifier time limit (upload, test.sh, reward download together)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Variables of the test.sh command; `${VAR}`/`${VAR:-default}` resolve from the host."""
    user: str | int | None = None
    """User test.sh runs as; none means the image's default user."""
    environment_mode: VerifierEnvironmentMode | None = None
    """`shared` (the agent's container) or `separate`; default: separate iff an
    `[verifier.environment]` is given."""
    environment: EnvironmentConfig | None = None
    """Environment of a separate verifier container."""
    collect: list[dict[str, Any]] = Field(default_factory=list)
    """Compose-service snapshot hooks (not applied: reported)."""
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None

    @model_validator(mode="after")
    def _mode_consistent(self) -> VerifierConfig:
        shared = self.environment_mode == VerifierEnvironmentMode.SHARED
        if shared and self.environment is not None:
            raise ValueError(
                "[verifier].environment_mode='shared' is incompatible with [verifier.environment]"
            )
        return self

    @property
    def mode(self) -> VerifierEnvironmentMode:
        """The effective mode, as Harbor resolves it for a single-step task."""
        if self.environment_mode is not None:
            return self.environment_mode
        if self.environment is not None:
            return VerifierEnvironmentMode.SEPARATE
        return VerifierEnvironmentMode.SHARED


class SolutionConfig(BaseModel):
    """`[solution]`: environment of solution/solve.sh under the oracle agent."""

    model_config = _IGNORE

    env: dict[str, str] = Field(default_factory=dict)


class ArtifactConfig(BaseModel):
    """One `[[artifacts]]` entry: a container path collected after the agent ran."""

    model_config = _IGNORE

    source: str
    """Container path (file or directory)."""
    destination: str | None = None
    """Relative host path under the attempt's artifacts; default mirrors `source`."""
    exclude: list[str] = Field(default_factory=list)
    """Patterns excluded from a directory artifact."""
    service: str | None = None
    """Compose service; only the main container (`None`/`main`) is supported."""

    @field_validator("source")
    @classmethod
    def _no_parent_parts(cls, value: str) -> str:
        if ".." in PurePosixPath(value).parts:
            raise ValueError(f"artifact source must not contain '..': {value!r}")
        return value

    @field_validator("destination")
    @classmethod
    def _relative_destination(cls, value: str | None) -> str | None:
        if not value:
            return None
        path = PurePosixPath(value)
        if "\\" in value or path.is_absolute() or ".." in path.parts:
            raise ValueError(f"artifact destination must be a relative path: {value!r}")
        if value.rstrip("/") == "manifest.json":
            raise ValueError("artifact destination 'manifest.json' is reserved")
        return value


def normalize_artifacts(entries: list[str | ArtifactConfig]) -> list[ArtifactConfig]:
    """Harbor accepts a bare path string for `{source = path}`."""
    return [ArtifactConfig(source=e) if isinstance(e, str) else e for e in entries]


class StepConfig(BaseModel):
    """One `[[steps]]` entry. Multi-step tasks are refused; only the name is read."""

    model_config = _IGNORE

    name: str


class TaskToml(BaseModel):
    """A whole task.toml (schema_version 1.x)."""

    model_config = _IGNORE

    schema_version: str = "1.4"
    task: PackageInfo | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    verifier: VerifierConfig = Field(default_factory=VerifierConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    environment: EnvironmentConfig = Field(default_factory=EnvironmentConfig)
    solution: SolutionConfig = Field(default_factory=SolutionConfig)
    source: str | None = None
    multi_step_reward_strategy: str | None = None
    steps: list[StepConfig] | None = None
    """Multi-step tasks: refused at load (`harbor_multi_step_unsupported`)."""
    artifacts: list[str | ArtifactConfig] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _rename_version(cls, data: Any) -> Any:
        if isinstance(data, dict) and "version" in data:
            data = dict(data)
            data.setdefault("schema_version", data.pop("version"))
        return data


# --- Job config (`harbor run -c`), the parts ageval reads ------------------------------


class JobDataset(BaseModel):
    """One `datasets` entry. Only local `path` datasets are accepted."""

    model_config = _IGNORE

    path: str | None = None
    name: str | None = None
    version: str | None = None
    ref: str | None = None
    registry_url: str | None = None
    registry_path: str | None = None
    repo: str | None = None
    task_names: list[str] | None = None
    """Glob patterns of task directory names to keep."""
    exclude_task_names: list[str] | None = None
    """Glob patterns of task directory names to drop (after `task_names`)."""
    n_tasks: int | None = None
    """Keep at most this many tasks (after both filters)."""


class JobTask(BaseModel):
    """One `tasks` entry. Only local `path` tasks are accepted."""

    model_config = _IGNORE

    path: str | None = None
    git_url: str | None = None
    git_commit_id: str | None = None
    name: str | None = None
    ref: str | None = None


class JobAgent(BaseModel):
    """`agents[0]`: only the timeout overrides and `env` are applied."""

    model_config = _IGNORE

    name: str | None = None
    import_path: str | None = None
    model_name: str | None = None
    override_timeout_sec: Seconds | None = None
    max_timeout_sec: Seconds | None = None
    env: dict[str, str] = Field(default_factory=dict)


class JobEnvironment(BaseModel):
    """`environment`: resource overrides and `env` are applied."""

    model_config = _IGNORE

    override_cpus: int | float | None = None
    override_memory_mb: int | None = None
    override_storage_mb: int | None = None
    override_gpus: int | None = None
    env: dict[str, str] = Field(default_factory=dict)

    @field_validator("override_cpus")
    @classmethod
    def _finite_cpus(cls, value: int | float | None) -> int | float | None:
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"override_cpus must be a finite number; got {value}")
        return value

    @field_validator("env", mode="before")
    @classmethod
    def _env_list_to_dict(cls, value: Any) -> Any:
        """Harbor still accepts the legacy `["KEY=VALUE", ...]` list."""
        if not isinstance(value, list):
            return value
        pairs = {}
        for item in value:
            if not isinstance(item, str) or "=" not in item:
                raise ValueError(f"invalid env entry {item!r}: expected KEY=VALUE")
            key, text = item.split("=", 1)
            pairs[key.strip()] = text.strip()
        return pairs


class JobVerifier(BaseModel):
    """`verifier`: applied as a whole (see docs/harbor.md)."""

    model_config = _IGNORE

    override_timeout_sec: Seconds | None = None
    max_timeout_sec: Seconds | None = None
    env: dict[str, str] = Field(default_factory=dict)
    import_path: str | None = None
    """A Harbor `BaseVerifier` class (`module.path:ClassName`) replacing tests/test.sh."""
    class_kwargs: dict[str, Any] = Field(
        default_factory=dict, validation_alias=AliasChoices("kwargs")
    )
    """`kwargs`: keyword arguments of the `import_path` class (refused without it). Read
    through `AliasChoices`: a field or plain alias named `kwargs` clashes with the `**kwargs`
    of the `__init__` that pydantic's mypy plugin synthesizes."""
    disable: bool = False
    include_logs: list[str] = Field(default_factory=list)
    exclude_logs: list[str] = Field(default_factory=list)
    extra_allowed_hosts: list[str] = Field(default_factory=list)


class JobConfig(BaseModel):
    """The job config fields ageval reads; every other declared key is reported."""

    model_config = _IGNORE

    n_attempts: int = Field(default=1, ge=1)
    install_only: bool = False
    timeout_multiplier: Multiplier = 1.0
    agent_timeout_multiplier: Multiplier | None = None
    verifier_timeout_multiplier: Multiplier | None = None
    environment_build_timeout_multiplier: Multiplier | None = None
    environment: JobEnvironment = Field(default_factory=JobEnvironment)
    verifier: JobVerifier = Field(default_factory=JobVerifier)
    agents: list[JobAgent] = Field(default_factory=lambda: [JobAgent()])
    datasets: list[JobDataset] = Field(default_factory=list)
    tasks: list[JobTask] = Field(default_factory=list)
    artifacts: list[str | ArtifactConfig] = Field(default_factory=list)
    extra_instruction_paths: list[str] = Field(default_factory=list)
    extra_instructions: list[str] = Field(default_factory=list)
