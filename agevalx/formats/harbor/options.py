"""A Harbor run's own settings: the job config, `--env-params`, the primary metric, the strategy.

    options = HarborOptions.build(job_config="job.yaml", env_params='{"setup": {"workdir": "/w"}}')

Layering is the loader's (run settings > job config > task.toml). `digest` names the
settings in cache keys without holding any value: env values may be secrets.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agevalx.config.common import MAX_SECONDS
from agevalx.errors import UsageError
from agevalx.formats.base import FormatOptions
from agevalx.formats.harbor.errors import HarborWarning
from agevalx.formats.harbor.jobconfig import check_refusals, read_job_config, unapplied_fields
from agevalx.formats.harbor.spec import RunOverrides
from agevalx.hashing import digest_json

PrimaryMetric = Literal["score", "passed"]
Strategy = Literal["avg", "pass"]


class _Setup(BaseModel):
    model_config = ConfigDict(extra="forbid")

    image: str | None = None
    """Replaces every task's `environment.docker_image`."""
    workdir: str | None = None
    """The working directory of every task."""


class _Resources(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cpus: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    memory_mb: int | None = Field(default=None, gt=0)
    storage_mb: int | None = Field(default=None, gt=0)
    gpus: int | None = Field(default=None, ge=0)


class EnvParams(BaseModel):
    """`--env-params`: the run's environment settings, over the job config and task.toml."""

    model_config = ConfigDict(extra="forbid")

    setup: _Setup = Field(default_factory=_Setup)
    """`image` and `workdir` of every task."""
    resources: _Resources = Field(default_factory=_Resources)
    """cpus, memory_mb, storage_mb and gpus of every task."""
    env: dict[str, str] = Field(default_factory=dict)
    """Container environment of every command (over `environment.env`)."""
    agent_env: dict[str, str] = Field(default_factory=dict)
    """The agent phase's extra environment (over `agents[0].env`)."""
    evaluation_env_variables: dict[str, str] = Field(default_factory=dict)
    """Verifier variables (over the job's `verifier.env` and the task's `[verifier.env]`)."""
    agent_timeout_sec: float | None = Field(default=None, gt=0, le=MAX_SECONDS, allow_inf_nan=False)
    """Replaces every task's `agent.timeout_sec` (Harbor's max and multipliers still apply)."""
    verifier_timeout_sec: float | None = Field(
        default=None, gt=0, le=MAX_SECONDS, allow_inf_nan=False
    )
    """Replaces every task's `verifier.timeout_sec`."""

    def overrides(self) -> RunOverrides:
        return RunOverrides(
            image=self.setup.image,
            workdir=self.setup.workdir,
            cpus=self.resources.cpus,
            memory_mb=self.resources.memory_mb,
            storage_mb=self.resources.storage_mb,
            gpus=self.resources.gpus,
            environment_env=self.env,
            agent_env=self.agent_env,
            evaluation_env_variables=self.evaluation_env_variables,
            agent_timeout_sec=self.agent_timeout_sec,
            verifier_timeout_sec=self.verifier_timeout_sec,
        )


class ExecutionParams(BaseModel):
    """`--execution-params`: how this run executes, over the job config (Harbor's command-line
    flags). `k`, `attempt_strategy` and `max_concurrency` are the run's `-k`,
    `--attempt-strategy` and `--max-concurrent`."""

    model_config = ConfigDict(extra="forbid")

    run_timeout_multiplier: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Multiplies every task's effective agent timeout (after the job config's overrides,
    `max_timeout_sec` and multipliers); the result is capped at a year."""
    k: int | None = Field(default=None, ge=1)
    """Attempts per task (`-k`; Harbor's `n_attempts`)."""
    attempt_strategy: Strategy | None = None
    """`avg` or `pass` (`--attempt-strategy`)."""
    max_concurrency: int | None = Field(default=None, ge=1)
    """Attempts at once (`--max-concurrent`; Harbor's `n_concurrent_trials`)."""


_Params = TypeVar("_Params", bound=BaseModel)

ENV_PARAMS_KEYS = (
    "setup.image, setup.workdir, resources.{cpus,memory_mb,storage_mb,gpus}, env, agent_env, "
    "evaluation_env_variables, agent_timeout_sec, verifier_timeout_sec"
)
EXECUTION_PARAMS_KEYS = "run_timeout_multiplier, k, attempt_strategy, max_concurrency"


def _parse_params(text: str, model: type[_Params], flag: str, example: str, keys: str) -> _Params:
    code = f"{flag.removeprefix('--').replace('-', '_')}_invalid"
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            code,
            f"{flag} is not JSON: {exc.msg} (column {exc.colno})",
            field=flag,
            hint=f"e.g. {flag} '{example}'",
        ) from None
    try:
        return model.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise UsageError(
            code,
            f"{flag}{'.' + where if where else ''}: {first['msg']}",
            field=flag,
            hint=f"keys: {keys}",
        ) from None


def parse_env_params(text: str) -> EnvParams:
    """Parse `--env-params` (a JSON object); a coded usage error names the bad field."""
    example = '{"setup": {"workdir": "/app"}}'
    return _parse_params(text, EnvParams, "--env-params", example, ENV_PARAMS_KEYS)


def parse_execution_params(text: str) -> ExecutionParams:
    """Parse `--execution-params` (a JSON object); a coded usage error names the bad field."""
    example = '{"run_timeout_multiplier": 2}'
    return _parse_params(
        text, ExecutionParams, "--execution-params", example, EXECUTION_PARAMS_KEYS
    )


class HarborOptions(BaseModel, FormatOptions):
    """Everything a Harbor run is given besides the dataset path."""

    model_config = ConfigDict(frozen=True)

    job_config: str | None = None
    """A job config file (YAML or JSON) or inline JSON, as `harbor run -c` takes."""
    job_document: dict[str, Any] | None = Field(default=None, repr=False)
    """The job config as read (validated), for the settings digest."""
    base_dir: Path = Field(default_factory=Path.cwd)
    """Relative paths in the job config resolve here (the current directory, as Harbor)."""
    env_params: EnvParams = Field(default_factory=EnvParams, repr=False)
    execution_params: ExecutionParams = Field(default_factory=ExecutionParams)
    dataset_name: str | None = None
    """Keeps this dataset's results apart from other Harbor datasets' (seed 003): recorded on
    every task and part of every key, so results are reused only under the same name."""
    primary_metric: PrimaryMetric = "score"
    """`score` (Harbor's primary reward) or `passed` (a single 0/1 reward, as `correct`)."""
    strategy: Strategy | None = None
    """`avg` or `pass` (stop a task at its first passed attempt); `None` picks `pass` when the
    primary metric is `passed`, else `avg`."""
    warnings: list[HarborWarning] = Field(default_factory=list)
    """The job config's declared fields that ageval does not apply (reported, not fatal)."""

    @classmethod
    def build(
        cls,
        *,
        job_config: str | None = None,
        env_params: str | None = None,
        primary_metric: PrimaryMetric = "score",
        strategy: Strategy | None = None,
        execution_params: str | None = None,
        dataset_name: str | None = None,
    ) -> HarborOptions:
        loaded = read_job_config(job_config) if job_config is not None else None
        if loaded is not None:
            check_refusals(loaded)
        return cls(
            job_config=job_config,
            job_document=loaded.raw if loaded else None,
            warnings=unapplied_fields(loaded) if loaded else [],
            env_params=parse_env_params(env_params) if env_params else EnvParams(),
            execution_params=(
                parse_execution_params(execution_params) if execution_params else ExecutionParams()
            ),
            dataset_name=check_dataset_name(dataset_name),
            primary_metric=primary_metric,
            strategy=strategy,
        )

    @property
    def effective_strategy(self) -> Strategy:
        if self.strategy is not None:
            return self.strategy
        if self.execution_params.attempt_strategy is not None:
            return self.execution_params.attempt_strategy
        return "pass" if self.primary_metric == "passed" else "avg"

    @property
    def has_job_sources(self) -> bool:
        """The job config lists `datasets` or `tasks` of its own."""
        document = self.job_document or {}
        return bool(document.get("datasets") or document.get("tasks"))

    def overrides(self) -> RunOverrides:
        return self.env_params.overrides().model_copy(
            update={"run_timeout_multiplier": self.execution_params.run_timeout_multiplier}
        )

    def digest(self) -> str | None:
        """Names the run-wide settings in keys (`None` when there are none); holds no value.
        The execution parameters that change no task (k, strategy, concurrency) and an unset
        dataset name stay out of it."""
        multiplier = self.execution_params.run_timeout_multiplier
        if (
            self.job_document is None
            and self.env_params == EnvParams()
            and multiplier is None
            and self.dataset_name is None
        ):
            return None
        document: dict[str, Any] = {
            "job_config": self.job_document,
            "env_params": self.env_params.model_dump(mode="json"),
        }
        if multiplier is not None:
            document["run_timeout_multiplier"] = multiplier
        if self.dataset_name is not None:
            document["dataset_name"] = self.dataset_name
        return digest_json(document)


DATASET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_dataset_name(name: str | None) -> str | None:
    """A dataset name names a directory part: letters, digits, `.`, `_`, `-` (at most 128)."""
    if name is None or DATASET_NAME.match(name):
        return name
    raise UsageError(
        "dataset_name_invalid",
        f"--dataset-name {name!r} is not a name",
        field="--dataset-name",
        hint="letters, digits, '.', '_' and '-', starting with a letter or digit (at most 128)",
    )
