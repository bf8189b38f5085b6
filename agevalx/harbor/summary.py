"""A Harbor job's metrics as seed 003 defines them, from its attempts' results.

`score` is Harbor's primary reward and `passed` the result of a single 0/1 reward. With the
`avg` strategy a task reports avg@k of both and pass@k of `passed`; with `pass` it reports
pass@k of `passed` only. pass@k is decided per task (Harbor drops it for the whole job as
soon as one reward is fractional: `harbor_pass_at_k` gives Harbor's number beside ours).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agevalx.harbor.options import PrimaryMetric, Strategy
from agevalx.harbor.outcomes import VERIFIER_RESULT_INVALID, VERIFIER_TIMEOUT
from agevalx.harbor.outcomes import VERIFIER_SANDBOX_FAILED as SANDBOX_FAILED
from agevalx.harbor.scoring import AttemptScore, aggregate_task, harbor_pass_at_k
from agevalx.results.models import AttemptResult, HarborSummary, HarborTaskMetrics


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
        avg_score=_mean([task.avg_score for task in values]),
        avg_passed=_mean([task.avg_passed for task in values]),
        pass_at_k=_fraction([task.pass_at_k for task in values]),
        tasks=tasks,
        invalid_rewards=sum(
            1
            for r in results
            if r.details.get("warning") in (VERIFIER_RESULT_INVALID, VERIFIER_TIMEOUT)
        ),
        harbor_pass_at_k={str(k): v for k, v in harbor_pass_at_k(trials).items()},
    )


def _mean(values: Sequence[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return sum(known) / len(known) if known else None
