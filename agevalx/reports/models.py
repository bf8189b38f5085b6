"""The report document (`--format json`): rows of metrics, each traceable to node keys."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agevalx.failures import FailureClass
from agevalx.limits import REPORT_FORMATS
from agevalx.limits import ReportFormat as ReportFormat
from agevalx.results.models import Status, TaskMetrics
from agevalx.results.usage import Cost, ModelUsage

FORMATS: tuple[ReportFormat, ...] = REPORT_FORMATS


class ReportModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AttemptRef(ReportModel):
    """One attempt counted in a row, with the node keys its outcome comes from."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )

    attempt_id: str
    """Names `.ageval/runs/<attempt_id>/result.json`."""
    task_id: str
    """The task."""
    attempt: int
    """Attempt index within its job (0..k-1)."""
    status: Status
    """PASS, FAIL, DONE (scored without a pass/fail result) or ERROR."""
    score: float | None
    """The evaluator's score, when it gave one."""
    limit: str | None
    """The run-stage quota the attempt ran out of, if any."""
    error: str | None
    """`code: message` of an ERROR attempt (first line of the message)."""
    failure_class: FailureClass | None = Field(default=None, alias="class")
    """The class of an ERROR attempt's code: `agent`, `task` or `infrastructure`
    (docs/failures.md); an infrastructure ERROR is left out of the row's scores unless
    counted (`count_infra_as_fail`)."""
    config_digest: str
    """The lock digest: the exact configuration of the attempt."""
    run_key: str | None
    """Key of the run node (agent outputs)."""
    evaluate_key: str | None
    """Key of the evaluate node (the status and score)."""


class ReportRow(ReportModel):
    """Metrics of one task (or of every task: `overall`) for one agent and model binding."""

    scope: Literal["task", "overall"]
    """`task`: one task's attempts; `overall`: every task of this agent and model."""
    task_id: str | None
    """The task (None for an overall row)."""
    agent: str
    """The agent label, or `role=label` pairs when several roles are bound."""
    model: str
    """The model id (`-` when none), or `role=model` pairs when several roles are bound."""
    agents: dict[str, str]
    """Role -> agent label."""
    models: dict[str, str | None]
    """Role -> model id."""
    tasks: int
    """Tasks counted in the row (1 for a task row)."""
    metrics: TaskMetrics
    """n, PASS/FAIL/ERROR/DONE counts, pass rate, pass@k, pass^k, avg score, limits hit."""
    pass_rate_stderr: float | None = None
    """The spread over repeats: the standard error of the pass rate. A task row's is the
    binomial sqrt(p(1-p)/n) over its judged attempts (None under 2); an overall row's, that of
    the mean of its tasks' pass rates, sqrt(sum of their squared errors) / tasks."""
    config_digests: list[str]
    """Lock digests of the attempts counted (sorted, distinct)."""
    attempts: list[AttemptRef]
    """The attempts counted, with their run and evaluate node keys."""
    usage: ModelUsage | None = None
    """The agents' model traffic summed over the attempts (None when none used a model)."""
    cost_per_pass: Cost | None = None
    """`usage.cost_usd` over the PASS attempts (None without a pass or without usage)."""
    evaluator_usage: ModelUsage | None = None
    """The evaluators' own model traffic (LLM judges) over the attempts, apart from `usage`
    (None when no evaluator used a model)."""


class JobRef(ReportModel):
    """A job (`suite-runs/<job_id>/summary.json`) the report read."""

    job_id: str
    """Names `.ageval/suite-runs/<job_id>/`."""
    dataset_id: str
    """From ageval.yaml."""
    k: int
    """Attempts per task in the job."""
    summary_key: str
    """Key of the job's summary node."""


class DatasetRef(ReportModel):
    """A dataset a leaderboard counts attempts of."""

    id: str
    """From ageval.yaml (or a Harbor dataset's name)."""
    version: str | None
    """Its version, as recorded by the runs (None when they did not record it)."""
    digest: str
    """The xxh3-128 of the canonical JSON of its tasks' lock digests, `{task: [digests]}`:
    the exact configuration the attempts ran."""


class Provenance(ReportModel):
    """What produced a leaderboard node: the ageval release and the datasets."""

    ageval: str
    """The ageval release that rendered it (it is in the node's key)."""
    datasets: list[DatasetRef]
    """Sorted by id."""


class Report(ReportModel):
    """A leaderboard: one row per (task, agent, model) and one overall row per (agent, model)."""

    format: Literal["ageval.report/1"] = "ageval.report/1"
    """Format version."""
    datasets: list[str]
    """Dataset ids of the attempts counted."""
    k: int
    """The k of pass@k and pass^k: attempts per task in the job (the largest attempt index + 1
    when the report covers a whole dataset)."""
    jobs: list[JobRef]
    """The job summaries read (all of the dataset's, or the one job reported)."""
    overall: list[ReportRow]
    """One row per (agent, model), best pass@k first."""
    tasks: list[ReportRow]
    """One row per (task, agent, model), sorted by task, agent, model."""
    infrastructure: dict[str, int] = Field(default_factory=dict)
    """Code -> ERROR attempts of class infrastructure: not the agent's fault, reported here
    and left out of n, the pass rates and pass@k unless `count_infra_as_fail`."""
    count_infra_as_fail: bool = False
    """Whether the scores count infrastructure ERRORs as not passed."""
    provenance: Provenance | None = None
    """For a leaderboard node (`ageval report --remote`): the release and the datasets."""
