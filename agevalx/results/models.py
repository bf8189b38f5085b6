"""result.json (one attempt) and summary.json (a job): the formats people and scripts read."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from agevalx.failures import FailureClass, failure_class
from agevalx.results.usage import Cost, ModelUsage

Status = Literal["PASS", "FAIL", "DONE", "ERROR"]
"""DONE: completed and scored without a pass/fail result (a fractional reward, one with
several keys, or verification disabled)."""


class ResultModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


Stage = Literal["environment", "run", "evaluate"]


class _Classified(ResultModel):
    """A failure with its code's class, the JSON key `class` (`failure_class` in Python)."""

    model_config = ConfigDict(
        extra="forbid",
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )

    code: str
    """Stable error code (`image_build_failed`, `evaluate_timeout`, `agent_crashed`, ...)."""
    failure_class: FailureClass | None = Field(default=None, alias="class")
    """`agent`, `task` or `infrastructure` (docs/failures.md); from the failure catalogue
    when not given (a result.json written before the catalogue has none)."""

    @model_validator(mode="after")
    def _classified(self) -> _Classified:
        if self.failure_class is None:
            self.failure_class = failure_class(self.code)
        return self


class ErrorInfo(_Classified):
    """Why an attempt is ERROR."""

    stage: Stage
    """The stage that failed."""
    message: str
    """What happened."""
    hint: str | None = None
    """What to do, or the tail of the failing program's output."""


class TryRecord(_Classified):
    """An earlier try of an attempt that ended with an infrastructure failure and was
    retried (same attempt id)."""

    number: int
    """The try, from 1."""
    stage: Stage
    """The stage that failed."""
    message: str
    """What happened."""


class NodeRef(ResultModel):
    """A graph node behind this result."""

    id: str
    """Node identity, e.g. `run:task#0`."""
    kind: str
    """Node kind."""
    key: str
    """Content key (xxh3-128)."""
    outcome: Literal["reused", "computed", "failed", "blocked", "skipped"]
    """Whether this invocation computed it or reused it from the cache; `blocked`: a parent
    failed; `skipped`: held back (the job's spend limit kept it from starting)."""
    retried: str | None = None
    """Set when a cluster computed it a second time: the infrastructure failure (a worker or
    machine lost) that ended the first try. Left out of result.json when unset."""

    @model_serializer(mode="wrap")
    def _without_unset_retry(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("retried") is None:
            data.pop("retried", None)
        return data


class PublishedArtifact(ResultModel):
    """An artifact the attempt produced, kept in the cache with its run."""

    id: str
    """The task's `artifacts.publishable` id (the path, for a task that declares none)."""
    path: str
    """Where it is under the attempt's `artifacts/` (for publishable ones: relative to the
    agent's working directory)."""
    producer: str
    """The role (or stage) that produced it."""
    digest: str | None
    """xxh3-128 of the file, or of the manifest of a directory's entries; None when the run
    left nothing at the path."""


class AttemptResult(ResultModel):
    """One attempt's `result.json`."""

    format: Literal["ageval.result/1"] = "ageval.result/1"
    """Format version."""
    attempt_id: str
    """`<task>-<attempt>-<run key prefix>`; names the directory under .ageval/runs/."""
    dataset_id: str
    """From ageval.yaml."""
    dataset_name: str | None = None
    """A Harbor run's `--dataset-name` (results are reused only under the same name)."""
    task_id: str
    """The task."""
    attempt: int
    """Attempt index within the job (0..k-1)."""
    status: Status
    """PASS or FAIL from the evaluator; DONE when it scored without a pass/fail result;
    ERROR when a stage failed."""
    score: float | None = None
    """The evaluator's score, when it gives one."""
    details: dict[str, Any] = Field(default_factory=dict)
    """The evaluator's details."""
    limit: str | None = None
    """The run-stage quota that ran out (`wall_time_seconds`, `agent_invocations`)."""
    error: ErrorInfo | None = None
    """Set when status is ERROR."""
    tries: list[TryRecord] = Field(default_factory=list)
    """Earlier tries of this attempt that failed with an infrastructure failure and were
    retried, in order; left out of result.json when there were none."""
    agents: dict[str, str] = Field(default_factory=dict)
    """Role -> agent label."""
    models: dict[str, str | None] = Field(default_factory=dict)
    """Role -> model id."""
    invocations: int | None = None
    """Agent invocations the run stage made."""
    seconds: dict[str, float] = Field(default_factory=dict)
    """Time per stage (environment, run, evaluate) when they were computed."""
    config_digest: str
    """The lock's digest: the exact configuration that produced this result."""
    nodes: list[NodeRef]
    """Every node behind the result, with its key and whether it was reused."""
    evaluator_output: str | None = None
    """The evaluator's stdout/stderr tail."""
    forked_from: dict[str, str] | None = None
    """For a fork: the source attempt and checkpoint key. Forks are not counted in pass@k."""
    artifacts: list[PublishedArtifact] = Field(default_factory=list)
    """What the run stage published (`artifacts.publishable`, or a Harbor task's collected
    artifacts); the files are in `.ageval/runs/<attempt_id>/artifacts/`."""
    usage: dict[str, ModelUsage] = Field(default_factory=dict)
    """Role -> the agent's model traffic through the gateway (tokens, cost, retries); for a
    run stage that failed, what it used before it failed."""
    evaluator_usage: dict[str, ModelUsage] = Field(default_factory=dict)
    """Role -> the evaluator's own model traffic (its LLM judge, `evaluation.judge`),
    counted apart from the agents' `usage`."""

    @model_serializer(mode="wrap")
    def _without_no_tries(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if not data.get("tries"):
            data.pop("tries", None)
        return data

    @property
    def failure_class(self) -> FailureClass | None:
        """The class of the ERROR (None when the attempt is not ERROR)."""
        return self.error.failure_class if self.error is not None else None


class TaskMetrics(ResultModel):
    """Metrics of one task (or of the whole job) over its attempts."""

    n: int
    """Attempts counted (ERROR attempts included, as not passed; those of class
    infrastructure only with `--count-infra-as-fail`)."""
    passed: int
    """PASS attempts."""
    failed: int
    """FAIL attempts."""
    errors: int
    """ERROR attempts, of every class (reported, never dropped)."""
    infrastructure: int = 0
    """ERROR attempts of class infrastructure: not the agent's fault, so left out of `n`,
    pass_rate, pass@k and pass^k unless `--count-infra-as-fail` counts them."""
    done: int = 0
    """DONE attempts: scored without a pass/fail result; left out of pass_rate and pass@k."""
    pass_rate: float | None
    """passed / (n - done)."""
    pass_at_k: float | None
    """Unbiased pass@k over the attempts with a pass/fail result: 1 - C(n-c, k) / C(n, k)."""
    pass_hat_k: float | None
    """pass^k: C(c, k) / C(n, k), the chance that k attempts all pass."""
    avg_score: float | None
    """Mean score over attempts that have one (avg@k)."""
    limits: dict[str, int] = Field(default_factory=dict)
    """How many attempts hit each quota."""


class JobRun(ResultModel):
    """What one `ageval run` of a job did besides its results."""

    retries: int = 0
    """Tries retried after an infrastructure failure, over every attempt."""
    retried_codes: dict[str, int] = Field(default_factory=dict)
    """Code of the infrastructure failure -> tries retried for it."""
    not_run: int = 0
    """Attempts the job's spend limit kept from starting."""
    stopped_by_limit: int = 0
    """Attempts in flight that the job's spend limit stopped (`limit: job_cost` /
    `job_tokens` in their result)."""
    limit: str | None = None
    """The job's spend limit that was reached: `job_cost` or `job_tokens`; None when none."""
    spend: dict[str, Any] = Field(default_factory=dict)
    """What the agents spent in this run, as the job's budget counted it: `cost_usd`,
    `tokens`, `requests`, `unknown_cost_requests`, and the limits `max_cost`, `max_tokens`,
    `reached`."""
    gateway: list[dict[str, Any]] = Field(default_factory=list)
    """Per model upstream (origin and model), the gateway's concurrency figures: limit,
    peak, final, in flight, 429s (`throttled`) and the curve of the limit over time."""


class JobSummary(ResultModel):
    """`summary.json` of a job (k > 1 or several tasks).

    Besides these fields, a task format may add one section of its own metrics under its
    name (`Dataset.summary_sections`; each format's docs describe its section).
    """

    model_config = ConfigDict(extra="allow")

    format: Literal["ageval.summary/1"] = "ageval.summary/1"
    """Format version."""
    job_id: str
    """Names the directory under .ageval/suite-runs/."""
    dataset_id: str
    """From ageval.yaml."""
    k: int
    """Attempts per task."""
    tasks: dict[str, TaskMetrics]
    """Per task."""
    overall: TaskMetrics
    """Task-averaged pass@k / pass^k / avg@k; counts summed."""
    attempts: list[dict[str, Any]]
    """Index of attempts: task, attempt, status, score, attempt_id, result path."""
    usage: ModelUsage | None = None
    """The agents' model traffic summed over every attempt (None when no role used a model)."""
    cost_per_pass: Cost | None = None
    """`usage.cost_usd` divided by the PASS attempts (None without a pass)."""
    evaluator_usage: ModelUsage | None = None
    """The evaluators' own model traffic (LLM judges) summed over every attempt, apart from
    `usage` (None when no evaluator used a model)."""
    summary_key: str
    """Key of the summary node (content-addressed: same key, same numbers)."""
    run: JobRun | None = None
    """Figures of the `ageval run` that wrote this file (retries, spend limit, model
    concurrency); not part of the summary's key. Left out when unset."""

    @model_serializer(mode="wrap")
    def _without_unset_run(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("run") is None:
            data.pop("run", None)
        return data
