"""A Harbor job's metrics as seed 003 defines them, from its attempts' results.

`score` is Harbor's primary reward and `passed` the result of a single 0/1 reward. With the
`avg` strategy a task reports avg@k of both and pass@k of `passed`; with `pass` it reports
pass@k of `passed` only. pass@k is decided per task (Harbor drops it for the whole job as
soon as one reward is fractional: `harbor_pass_at_k` gives Harbor's number beside ours).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agevalx.formats.base import FormatFigures
from agevalx.formats.harbor.errors import HarborWarning
from agevalx.formats.harbor.options import PrimaryMetric, Strategy
from agevalx.formats.harbor.outcomes import VERIFIER_RESULT_INVALID, VERIFIER_TIMEOUT
from agevalx.formats.harbor.outcomes import VERIFIER_SANDBOX_FAILED as SANDBOX_FAILED
from agevalx.formats.harbor.scoring import AttemptScore, aggregate_task, harbor_pass_at_k
from agevalx.results.models import AttemptResult


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HarborTaskMetrics(_Model):
    """A Harbor task's metrics over its attempts (ERROR attempts have no score: left out)."""

    attempts: int
    """Attempts with a score."""
    avg_score: float | None
    """avg@k of `score` (Harbor's primary reward)."""
    avg_passed: float | None
    """avg@k of `passed` (attempts whose reward is a single 0/1 value)."""
    pass_at_k: bool | None
    """Any attempt passed; `None` when no attempt has a pass result."""
    primary: float | None
    """The task's value of the primary metric under the strategy."""


class HarborSummary(_Model):
    """A Harbor job's metrics as `harbor run` users read them (seed 003)."""

    dataset_name: str | None = None
    """`--dataset-name`, when the run gave one."""
    primary_metric: Literal["score", "passed"]
    """`score` (Harbor's primary reward) or `passed` (a single 0/1 reward)."""
    strategy: Literal["avg", "pass"]
    """`avg` (every attempt runs) or `pass` (a task stops at its first passed attempt)."""
    metric_name: Literal["score", "correct"]
    """What the primary metric is reported as."""
    primary: float | None
    """Mean over tasks of each task's primary value (tasks without one are left out)."""
    reward: float | None = None
    """With `primary_metric: passed`: Harbor's primary reward (avg@k of `score`, the Score)
    reported beside `correct` (the Pass Rate); `None` otherwise."""
    avg_score: float | None
    """Mean over tasks of avg@k of `score`."""
    avg_passed: float | None
    """Mean over tasks of avg@k of `passed`."""
    pass_at_k: float | None
    """Fraction of tasks (with a pass result) where some attempt passed."""
    tasks: dict[str, HarborTaskMetrics]
    """Per task."""
    invalid_rewards: int
    """Attempts whose verifier left no valid reward (scored 0, not passed, with a warning)."""
    harbor_pass_at_k: dict[str, float]
    """Harbor's own job-level pass@k for comparison: empty when one reward is not a single
    0/1 value (Harbor then drops it for the whole job)."""
    warnings: list[HarborWarning] = Field(default_factory=list)
    """One per attempt scored as a failure because its verifier left no valid reward
    (`verifier_result_invalid`) or timed out (`verifier_timeout`)."""
    void_tasks: list[str] = Field(default_factory=list)
    """Tasks an attempt of which could not be verified because the sandbox failed (after
    retries): they are invalid, and the job has no official score."""
    official: bool = True
    """False when `void_tasks` is not empty: compare no number of this job."""


def attempt_score(result: AttemptResult) -> AttemptScore | None:
    """The Harbor score of one attempt's result; `None` for an attempt without a score
    (ERROR: the verifier raised, or a stage failed)."""
    if result.status == "ERROR":
        return None
    details = result.details
    extra: Any = details.get("extra") or {}
    rewards = (extra.get("eval_raw_data") or {}).get("rewards") or {}
    passed = details.get("passed")
    return AttemptScore(
        score=result.score,
        passed=passed if isinstance(passed, bool) else None,
        rewards={str(name): float(value) for name, value in rewards.items()},
        warning=details.get("warning"),
    )


WARNING_CODES = (VERIFIER_RESULT_INVALID, VERIFIER_TIMEOUT)
"""Why a verified attempt was scored as a failure (seed 003: a WARNING)."""


def attempt_warnings(results: Sequence[AttemptResult]) -> list[HarborWarning]:
    """A warning for each attempt whose verifier left no valid reward or timed out."""
    found = []
    for result in results:
        code = result.details.get("warning")
        if code not in WARNING_CODES:
            continue
        why = result.details.get("message") or "the verifier left no valid reward"
        found.append(
            HarborWarning(
                code=code,
                message=f"{result.task_id}#{result.attempt} ({result.attempt_id}): {why}; "
                "scored 0, not passed",
            )
        )
    return found


def _fraction(values: Sequence[bool | None]) -> float | None:
    known = [value for value in values if value is not None]
    return sum(known) / len(known) if known else None


def harbor_summary(
    task_ids: Sequence[str],
    results: Sequence[AttemptResult],
    primary_metric: PrimaryMetric,
    strategy: Strategy,
) -> HarborSummary:
    """Per-task and dataset metrics; tasks without a value are left out of a mean."""
    tasks: dict[str, HarborTaskMetrics] = {}
    trials: list[tuple[str, dict[str, float] | None]] = []
    for task_id in task_ids:
        scores = [attempt_score(r) for r in results if r.task_id == task_id]
        metrics = aggregate_task(scores, primary_metric=primary_metric, strategy=strategy)
        tasks[task_id] = HarborTaskMetrics(**metrics.model_dump())
        trials += [(task_id, dict(s.rewards) if s else None) for s in scores]
    values = list(tasks.values())
    void = sorted(
        {r.task_id for r in results if r.error is not None and r.error.code == SANDBOX_FAILED}
    )
    return HarborSummary(
        void_tasks=void,
        official=not void,
        primary_metric=primary_metric,
        strategy=strategy,
        metric_name="correct" if primary_metric == "passed" else "score",
        primary=_mean([task.primary for task in values]),
        reward=_mean([task.avg_score for task in values]) if primary_metric == "passed" else None,
        avg_score=_mean([task.avg_score for task in values]),
        avg_passed=_mean([task.avg_passed for task in values]),
        pass_at_k=_fraction([task.pass_at_k for task in values]),
        tasks=tasks,
        invalid_rewards=sum(1 for r in results if r.details.get("warning") in WARNING_CODES),
        warnings=attempt_warnings(results),
        harbor_pass_at_k={str(k): v for k, v in harbor_pass_at_k(trials).items()},
    )


def _mean(values: Sequence[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return sum(known) / len(known) if known else None


def summary_figures(section: dict[str, Any], k: int) -> FormatFigures:
    """The `harbor` section of a job summary as the recap and the viewer show it."""
    harbor = HarborSummary.model_validate(section)
    shown = {
        f"{harbor.metric_name} (primary)": harbor.primary,
        # with `passed` primary, Harbor's reward is the Score beside `correct`
        ("reward" if harbor.primary_metric == "passed" else "avg score"): harbor.avg_score,
        f"pass@{k}": harbor.pass_at_k,
    }
    figures = ", ".join(f"{name} {'-' if v is None else f'{v:.3f}'}" for name, v in shown.items())
    primary = "—" if harbor.primary is None else f"{harbor.primary:.2f}"
    return FormatFigures(
        headline=f"harbor [{harbor.strategy}]: {figures}",
        cell=f"{harbor.metric_name} {primary}" + ("" if harbor.official else " (not official)"),
        warning=None
        if harbor.official
        else "no official score: the sandbox failed verifying " + ", ".join(harbor.void_tasks),
    )
