"""pass@k, pass^k and avg@k: pure functions, pinned by golden tests."""

from __future__ import annotations

from collections.abc import Sequence
from math import comb

from agevalx.results.models import TaskMetrics


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """Unbiased estimator 1 - C(n-c, k) / C(n, k); None when fewer than k attempts exist."""
    if n < k or k < 1:
        return None
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """C(c, k) / C(n, k): the probability that k attempts drawn without replacement all pass."""
    if n < k or k < 1:
        return None
    return comb(c, k) / comb(n, k)


def task_metrics(
    statuses: Sequence[str],
    scores: Sequence[float | None],
    limits: Sequence[str | None],
    k: int,
    classes: Sequence[str | None] | None = None,
    *,
    count_infra_as_fail: bool = False,
) -> TaskMetrics:
    """Metrics of one task's attempts. `classes` holds each attempt's failure class (None
    for one that is not ERROR); an ERROR of class infrastructure is left out of n, the pass
    rate, pass@k and pass^k unless `count_infra_as_fail` (then it is not passed, as any
    other ERROR)."""
    infrastructure = [
        status == "ERROR" and failure_class == "infrastructure"
        for status, failure_class in zip(statuses, classes or [None] * len(statuses), strict=True)
    ]
    counted = [
        status
        for status, infra in zip(statuses, infrastructure, strict=True)
        if count_infra_as_fail or not infra
    ]
    n = len(counted)
    c = sum(1 for status in counted if status == "PASS")
    done = sum(1 for status in counted if status == "DONE")
    judged = n - done
    known = [score for score in scores if score is not None]
    hit: dict[str, int] = {}
    for limit in limits:
        if limit:
            hit[limit] = hit.get(limit, 0) + 1
    return TaskMetrics(
        n=n,
        passed=c,
        failed=sum(1 for status in statuses if status == "FAIL"),
        errors=sum(1 for status in statuses if status == "ERROR"),
        infrastructure=sum(infrastructure),
        done=done,
        pass_rate=c / judged if judged else None,
        pass_at_k=pass_at_k(judged, c, k),
        pass_hat_k=pass_hat_k(judged, c, k),
        avg_score=sum(known) / len(known) if known else None,
        limits=hit,
    )


def counts_infrastructure(metrics: TaskMetrics) -> bool:
    """Whether `metrics` counted its infrastructure ERRORs as not passed
    (`count_infra_as_fail`): then they are in `n`."""
    every = metrics.passed + metrics.failed + metrics.errors + metrics.done
    return metrics.infrastructure > 0 and metrics.n == every


def _mean(values: Sequence[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return sum(known) / len(known) if known else None


def overall_metrics(tasks: Sequence[TaskMetrics]) -> TaskMetrics:
    """Counts summed; rates averaged over tasks (each task weighs the same)."""
    limits: dict[str, int] = {}
    for task in tasks:
        for key, count in task.limits.items():
            limits[key] = limits.get(key, 0) + count
    return TaskMetrics(
        n=sum(task.n for task in tasks),
        passed=sum(task.passed for task in tasks),
        failed=sum(task.failed for task in tasks),
        errors=sum(task.errors for task in tasks),
        infrastructure=sum(task.infrastructure for task in tasks),
        done=sum(task.done for task in tasks),
        pass_rate=_mean([task.pass_rate for task in tasks]),
        pass_at_k=_mean([task.pass_at_k for task in tasks]),
        pass_hat_k=_mean([task.pass_hat_k for task in tasks]),
        avg_score=_mean([task.avg_score for task in tasks]),
        limits=limits,
    )
