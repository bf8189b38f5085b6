"""Grouping attempts into leaderboard rows; the metrics come from `agevalx.results.metrics`."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from agevalx.reports.models import AttemptRef, JobRef, Report, ReportRow
from agevalx.reports.sources import Collected, collect
from agevalx.results.metrics import overall_metrics, task_metrics
from agevalx.results.models import AttemptResult, JobSummary, TaskMetrics
from agevalx.results.usage import ModelUsage, cost_per_pass, total_usage

Scope = Literal["task", "overall"]
Binding = tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str | None], ...]]


def build_report(
    source: Path, *, job: str | None = None, count_infra_as_fail: bool = False
) -> Report:
    """The report of a dataset dir (every attempt, or one `job`), a job dir or a summary.json.
    Infrastructure ERRORs are left out of the scores unless `count_infra_as_fail`."""
    return report_of(collect(source, job), count_infra_as_fail=count_infra_as_fail)


def report_of(collected: Collected, *, count_infra_as_fail: bool = False) -> Report:
    """The report of results already collected; rows sorted so that the same results always
    give the same report."""
    results = collected.results
    k = collected.k or max(result.attempt for result in results) + 1
    by_task: dict[tuple[str, Binding], list[AttemptResult]] = defaultdict(list)
    for result in results:
        by_task[(result.task_id, _binding(result))].append(result)
    tasks = sorted(
        (
            _task_row(task_id, binding, mine, k, count_infra_as_fail)
            for (task_id, binding), mine in by_task.items()
        ),
        key=_row_order,
    )
    infrastructure = Counter(
        result.error.code
        for result in results
        if result.error is not None and result.failure_class == "infrastructure"
    )
    return Report(
        datasets=sorted({result.dataset_id for result in results}),
        k=k,
        jobs=sorted((_job_ref(summary) for summary in collected.jobs), key=lambda j: j.job_id),
        overall=sorted(_overall_rows(tasks), key=_leaderboard_order),
        tasks=tasks,
        infrastructure=dict(sorted(infrastructure.items())),
        count_infra_as_fail=count_infra_as_fail,
    )


def _binding(result: AttemptResult) -> Binding:
    return tuple(sorted(result.agents.items())), tuple(sorted(result.models.items()))


def _label(pairs: Iterable[tuple[str, str | None]]) -> str:
    """`label` for a single role, `role=label, ...` for several; `-` stands for none."""
    items = [(role, value or "-") for role, value in pairs]
    if len(items) == 1:
        return items[0][1]
    return ", ".join(f"{role}={value}" for role, value in items) or "-"


def _attempt_ref(result: AttemptResult) -> AttemptRef:
    keys = {node.kind: node.key for node in result.nodes}
    error = None
    if result.error is not None:
        lines = result.error.message.splitlines() or [""]
        error = f"{result.error.code}: {lines[0]}"
    return AttemptRef(
        attempt_id=result.attempt_id,
        task_id=result.task_id,
        attempt=result.attempt,
        status=result.status,
        score=result.score,
        limit=result.limit,
        error=error,
        failure_class=result.failure_class,
        config_digest=result.config_digest,
        run_key=keys.get("run"),
        evaluate_key=keys.get("evaluate"),
    )


def _task_row(
    task_id: str,
    binding: Binding,
    results: list[AttemptResult],
    k: int,
    count_infra_as_fail: bool,
) -> ReportRow:
    ordered = sorted(results, key=lambda r: (r.attempt, r.attempt_id))
    metrics = task_metrics(
        [r.status for r in ordered],
        [r.score for r in ordered],
        [r.limit for r in ordered],
        k,
        [r.failure_class for r in ordered],
        count_infra_as_fail=count_infra_as_fail,
    )
    usage = total_usage(u for r in ordered for u in r.usage.values())
    row = _row("task", task_id, binding, 1, metrics, [_attempt_ref(r) for r in ordered], usage)
    judged = total_usage(u for r in ordered for u in r.evaluator_usage.values())
    return row.model_copy(
        update={"pass_rate_stderr": _binomial_stderr(metrics), "evaluator_usage": judged}
    )


def _binomial_stderr(metrics: TaskMetrics) -> float | None:
    judged = metrics.n - metrics.done
    if judged < 2 or metrics.pass_rate is None:
        return None
    rate = metrics.pass_rate
    return round(math.sqrt(rate * (1 - rate) / judged), 6)


def _mean_stderr(rows: list[ReportRow]) -> float | None:
    errors = [row.pass_rate_stderr for row in rows]
    if not errors or any(error is None for error in errors):
        return None
    return round(
        math.sqrt(sum(error * error for error in errors if error is not None)) / len(rows), 6
    )


def _overall_rows(tasks: list[ReportRow]) -> list[ReportRow]:
    by_binding: dict[Binding, list[ReportRow]] = defaultdict(list)
    for row in tasks:
        by_binding[(tuple(row.agents.items()), tuple(row.models.items()))].append(row)
    return [
        _row(
            "overall",
            None,
            binding,
            len(rows),
            overall_metrics([row.metrics for row in rows]),
            [attempt for row in rows for attempt in row.attempts],
            total_usage(row.usage for row in rows if row.usage is not None),
        ).model_copy(
            update={
                "pass_rate_stderr": _mean_stderr(rows),
                "evaluator_usage": total_usage(
                    row.evaluator_usage for row in rows if row.evaluator_usage is not None
                ),
            }
        )
        for binding, rows in by_binding.items()
    ]


def _row(
    scope: Scope,
    task_id: str | None,
    binding: Binding,
    task_count: int,
    metrics: TaskMetrics,
    attempts: list[AttemptRef],
    usage: ModelUsage | None,
) -> ReportRow:
    agents, models = binding
    return ReportRow(
        scope=scope,
        task_id=task_id,
        agent=_label(agents),
        model=_label(models),
        agents=dict(agents),
        models=dict(models),
        tasks=task_count,
        metrics=metrics,
        config_digests=sorted({attempt.config_digest for attempt in attempts}),
        attempts=attempts,
        usage=usage,
        cost_per_pass=cost_per_pass(usage, metrics.passed),
    )


def _row_order(row: ReportRow) -> tuple[str, str, str, str, str]:
    return (row.task_id or "", row.agent, row.model, repr(row.agents), repr(row.models))


def _leaderboard_order(row: ReportRow) -> tuple[float, float, float, str, str, str, str]:
    """Best pass@k first, then pass rate and avg score; names break ties."""
    metrics = row.metrics

    def descending(value: float | None) -> float:
        return -value if value is not None else 1.0

    return (
        descending(metrics.pass_at_k),
        descending(metrics.pass_rate),
        descending(metrics.avg_score),
        row.agent,
        row.model,
        repr(row.agents),
        repr(row.models),
    )


def _job_ref(summary: JobSummary) -> JobRef:
    return JobRef(
        job_id=summary.job_id,
        dataset_id=summary.dataset_id,
        k=summary.k,
        summary_key=summary.summary_key,
    )
