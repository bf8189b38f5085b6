"""A member task's `task.yaml` (`format: ageval.task/1`)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, PositiveInt, field_validator, model_validator

from agevalx.config.common import (
    MAX_SECONDS,
    StrictModel,
    absolute_path,
    coded,
    relative_path,
)

TASK_FORMAT = "ageval.task/1"
ALLOWED_TOP_LEVEL_DIRS = frozenset(
    {"prompts", "schemas", "environment", "evaluation", "data", "lib", "upstream", "solution"}
)
FORBIDDEN_TASK_KEYS = {
    "harness": "the harness is chosen per run; remove the harness: block",
    "assurance": "assurance is not part of a task; remove it",
    "provider": "providers (provider.kind) are bound in the root profiles.yaml",
}
PROFILE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
SERVICE_NETWORK_MODE = re.compile(r"service:[A-Za-z0-9][A-Za-z0-9_.-]*")
Seconds = Annotated[int, Field(gt=0, le=MAX_SECONDS)]
"""A stage budget in whole seconds: positive, at most a year."""


class AgentProfileRef(StrictModel):
    """A role of the task; the executor behind it is bound in the root profiles.yaml."""

    id: str
    """The profile id, a key of `agent_profiles` in profiles.yaml."""

    @model_validator(mode="before")
    @classmethod
    def _no_binding_here(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in ("executor", "api_key"):
                if key in data:
                    raise coded(
                        "forbidden_role_field",
                        f"a task's role may not set {key!r}",
                        "bind executors and API keys in the root profiles.yaml",
                    )
            unknown = sorted(set(data) - {"id"})
            if unknown:
                raise coded(
                    "forbidden_role_field",
                    f"a task's role holds only its id, found {unknown[0]!r}",
                    "write `- id: solver` and configure the role in profiles.yaml",
                )
        return data

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if PROFILE_ID.fullmatch(value) is None:
            raise ValueError(f"profile id {value!r} must be 1-64 of A-Z a-z 0-9 . _ -")
        return value


class Limits(StrictModel):
    """Quotas of the attempt's stages."""

    wall_time_seconds: Seconds = 300
    """Wall-clock budget of the run stage."""

    environment_seconds: Seconds = 600
    """Budget of the environment stage (image, containers, setup.sh); expiry is ERROR."""

    evaluate_seconds: Seconds = 600
    """Budget of the evaluate stage; expiry is ERROR."""

    agent_invocations: PositiveInt | None = None
    """Most agent invocations in the run stage; unlimited when omitted."""

    agent_concurrency: PositiveInt = 1
    """Most run-stage agent invocations in flight at once."""


class Publishable(StrictModel):
    """An output the task publishes."""

    id: str = Field(min_length=1)
    """Name of the artifact."""

    path: str
    """Where it is, relative to /attempt/workspace."""

    producer: str = Field(min_length=1)
    """Which role (or stage) produces it."""

    @field_validator("path")
    @classmethod
    def _inside(cls, value: str) -> str:
        return relative_path(value, what="artifact path")


class Artifacts(StrictModel):
    """Artifacts of the task."""

    publishable: list[Publishable] = []
    """Outputs that are published with the result."""

    @field_validator("publishable")
    @classmethod
    def _unique_ids(cls, value: list[Publishable]) -> list[Publishable]:
        ids = [item.id for item in value]
        if len(ids) != len(set(ids)):
            raise ValueError("artifact ids must be unique")
        return value


class EvaluationEnvironment(StrictModel):
    """A named scoring host."""

    dockerfile: str | None = None
    """A Dockerfile relative to the task directory."""

    docker_image: str | None = None
    """An image reference."""

    @field_validator("dockerfile")
    @classmethod
    def _inside(cls, value: str | None) -> str | None:
        return None if value is None else relative_path(value, what="dockerfile")

    @model_validator(mode="after")
    def _one_source(self) -> EvaluationEnvironment:
        if self.dockerfile is None and self.docker_image is None:
            raise ValueError("a scoring environment needs a dockerfile or a docker_image")
        return self


class CollectEntry(StrictModel):
    """An absolute path copied from the attempt (or a compose service) to the scoring host."""

    path: str
    """Absolute path in the source container."""

    command: str | None = None
    """A command run in the source container before copying."""

    service: str | None = None
    """The compose service to copy from; the attempt container when omitted."""

    timeout_sec: Seconds | None = None
    """Budget of the command and copy."""

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str) -> str:
        return absolute_path(value)


class Evaluation(StrictModel):
    """How the attempt is scored; `evaluator.py` is used whenever it exists."""

    inputs: list[str] | None = None
    """Paths the evaluator reads, relative to /attempt/workspace."""

    output: str | None = None
    """Where the evaluator's output file is written, relative to /attempt/workspace."""

    tmpfs_mb: PositiveInt = 32
    """Size of the evaluator's /tmp tmpfs in MiB."""

    environments: dict[str, EvaluationEnvironment] = {}
    """Named scoring hosts (need `evaluate_host.isolated: true` and `environment: docker`)."""

    collect: list[CollectEntry] = []
    """Paths copied to the scoring host before evaluation; empty means no collection."""

    judge: str | None = Field(default=None, min_length=1)
    """A role of the task's `agent_profiles` the evaluator calls as its LLM judge: its model
    is reached through the model gateway with a token of this evaluation
    (`AGEVAL_JUDGE_BASE_URL`, `AGEVAL_JUDGE_API_KEY`, `AGEVAL_JUDGE_MODEL`) and its usage is
    counted apart from the agents'."""

    @field_validator("inputs")
    @classmethod
    def _inputs_inside(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [relative_path(item, what="input") for item in value]

    @field_validator("output")
    @classmethod
    def _output_inside(cls, value: str | None) -> str | None:
        return None if value is None else relative_path(value, what="output")


class Parameters(StrictModel):
    """Free-form values for run.py (`ctx.params`); the keys below also shape the container."""

    model_config = ConfigDict(extra="allow")

    cpus: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """CPU limit of the attempt container."""

    memory_mb: PositiveInt | None = None
    """Memory limit of the attempt container in MiB."""

    gpus: int | None = Field(default=None, ge=0)
    """Number of GPUs the attempt needs."""

    gpu_types: list[str] | None = None
    """Acceptable GPU models."""

    verifier_gpus: int | None = Field(default=None, ge=0)
    """GPUs for the scoring container."""

    network_mode: str | None = None
    """`service:<name>`: share the network of a compose service."""

    cap_add: list[str] | None = None
    """Linux capabilities added to the attempt container."""

    main_environment: dict[str, str] | None = None
    """Environment variables of the attempt container (never written to the lock)."""

    @field_validator("network_mode")
    @classmethod
    def _service_mode(cls, value: str | None) -> str | None:
        if value is not None and SERVICE_NETWORK_MODE.fullmatch(value) is None:
            raise ValueError("network_mode must be 'service:<compose service name>'")
        return value


class TaskConfig(StrictModel):
    """A member task's `task.yaml`."""

    format: Literal["ageval.task/1"]
    """Always `ageval.task/1`."""

    task_id: str
    """Must equal the task's directory name and `--task`."""

    description: str | None = None
    """A one-line description shown in reports."""

    parameters: Parameters = Parameters()
    """Values handed to run.py as `ctx.params`."""

    agent_profiles: list[AgentProfileRef] = []
    """The task's roles, each `{id}`; their executors are bound in profiles.yaml."""

    limits: Limits = Limits()
    """Stage budgets and quotas."""

    artifacts: Artifacts = Artifacts()
    """Published outputs."""

    evaluation: Evaluation = Evaluation()
    """Scoring configuration."""

    provenance: dict[str, Any] | None = None
    """Where the task comes from (free-form)."""

    @field_validator("agent_profiles")
    @classmethod
    def _unique_roles(cls, value: list[AgentProfileRef]) -> list[AgentProfileRef]:
        ids = [role.id for role in value]
        if len(ids) != len(set(ids)):
            raise ValueError("agent profile ids must be unique within a task")
        return value

    @model_validator(mode="after")
    def _judge_is_a_role(self) -> TaskConfig:
        judge = self.evaluation.judge
        if judge is not None and judge not in {role.id for role in self.agent_profiles}:
            raise coded(
                "unknown_judge_role",
                f"evaluation.judge names {judge!r}, which is not one of the task's roles",
                f"add `- id: {judge}` to agent_profiles and bind it in profiles.yaml",
            )
        return self
