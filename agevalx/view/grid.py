"""The grid: tasks x (agent, model, job), each cell the attempts of one task in one column.

The rows and metrics are the report's (`agevalx.reports`): a job column holds exactly what
`ageval report <job_dir>` counts, and the attempts of no job (single runs) form columns of
their own, as `ageval report` would count them. Forks are never counted: they are shown in
the lineage of the attempt they grew from.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from agevalx.reports.build import report_of
from agevalx.reports.errors import ReportError
from agevalx.reports.models import AttemptRef, Report, ReportRow
from agevalx.reports.sources import SUMMARY_FILE, Collected, collect, read_model
from agevalx.results.models import AttemptResult, JobSummary, Status, TaskMetrics
from agevalx.results.usage import ModelUsage, total_usage
from agevalx.view.source import ViewSource
from agevalx.view.usage import cost_of, tokens_of, total

Verdict = Literal["PASS", "FAIL", "MIXED", "DONE", "INFRA"]
STATUSES: tuple[Status, ...] = ("PASS", "FAIL", "ERROR", "DONE")


@dataclass(frozen=True)
class AttemptCell:
    """One attempt as the grid shows it."""

    attempt_id: str
    attempt: int
    status: Status
    score: float | None
    limit: str | None
    error: str | None
    tokens: int | None
    cost: float | None
    failure_class: str | None = None
    """The class of an ERROR (`agent`, `task`, `infrastructure`); None for other statuses."""


@dataclass(frozen=True)
class Cell:
    """The attempts of one task in one column, with the task's metrics."""

    attempts: tuple[AttemptCell, ...]
    metrics: TaskMetrics

    @property
    def verdict(self) -> Verdict:
        """PASS (every judged attempt passed), FAIL (none did), MIXED, DONE (none judged), or
        INFRA (no attempt counted: each failed on infrastructure)."""
        judged = self.metrics.n - self.metrics.done
        if self.metrics.n == 0 and self.metrics.infrastructure:
            return "INFRA"
        if judged == 0:
            return "DONE"
        if self.metrics.passed == judged:
            return "PASS"
        return "FAIL" if self.metrics.passed == 0 else "MIXED"

    @property
    def tokens(self) -> int | None:
        known = total(attempt.tokens for attempt in self.attempts)
        return None if known is None else int(known)

    @property
    def cost(self) -> float | None:
        return total(attempt.cost for attempt in self.attempts)


@dataclass(frozen=True)
class Column:
    """One (agent, model, job): its overall metrics and a cell per task it ran."""

    job_id: str | None
    """The job, or None for attempts that belong to no job."""
    agent: str
    model: str
    k: int
    metrics: TaskMetrics
    cells: dict[str, Cell]
    warning: str | None = None
    """Why the column may not match its job's summary (an attempt re-scored since)."""

    @property
    def label(self) -> str:
        return f"{self.agent} · {self.model} · {self.job_id or 'no job'}"

    @property
    def tokens(self) -> int | None:
        known = total(cell.tokens for cell in self.cells.values())
        return None if known is None else int(known)

    @property
    def cost(self) -> float | None:
        return total(cell.cost for cell in self.cells.values())


@dataclass(frozen=True)
class Grid:
    """Everything the grid page shows, and the results the attempt pages are made from."""

    datasets: list[str]
    tasks: list[str]
    columns: list[Column]
    jobs: list[JobSummary]
    results: dict[str, AttemptResult] = field(default_factory=dict)
    """Every result of the source, by attempt id (forks included)."""
    warnings: list[str] = field(default_factory=list)
    """Results and jobs left out, and why."""

    def statuses(self, task_id: str) -> set[str]:
        """The statuses of the task's attempts in every column (what the status filter reads)."""
        return {
            attempt.status
            for column in self.columns
            if task_id in column.cells
            for attempt in column.cells[task_id].attempts
        }


def plain_name(name: str) -> bool:
    """Whether `name` can only name an entry of one directory (ids come from files: a
    crafted result.json must not point the viewer elsewhere)."""
    return bool(name) and name not in (".", "..") and not any(c in name for c in "/\\\x00")


def build_grid(source: ViewSource) -> Grid:
    """The grid of a dataset (every job, then the attempts of no job) or of one job."""
    warnings: list[str] = []
    everything = None if source.job else _plain_results(collect(source.root), warnings)
    summaries = _job_order(source, everything.jobs if everything else None, warnings)
    columns: list[Column] = []
    results: dict[str, AttemptResult] = {}
    indexed: set[str] = set()
    for summary in summaries:
        job = _job_results(source, summary, everything)
        counted = _plain_results(job.counted, warnings)
        results.update((r.attempt_id, r) for r in job.current if plain_name(r.attempt_id))
        indexed.update(str(entry.get("attempt_id")) for entry in summary.attempts)
        report = report_of(counted)
        columns += _columns(report, counted.results, summary.job_id, job.warning)
    if everything is not None:
        results.update((result.attempt_id, result) for result in everything.results)
        loose = [
            result
            for result in everything.results
            if result.attempt_id not in indexed and result.forked_from is None
        ]
        if loose:
            columns += _columns(report_of(Collected(loose, [], None)), loose, None, None)
    return Grid(
        datasets=sorted({result.dataset_id for result in results.values()}),
        tasks=sorted({task for column in columns for task in column.cells}),
        columns=columns,
        jobs=summaries,
        results=results,
        warnings=sorted(set(warnings)),
    )


def _plain_results(collected: Collected, warnings: list[str]) -> Collected:
    kept = [result for result in collected.results if plain_name(result.attempt_id)]
    warnings += [
        f"left out a result whose attempt_id is not a directory name: {result.attempt_id!r}"
        for result in collected.results
        if not plain_name(result.attempt_id)
    ]
    return Collected(kept, collected.jobs, collected.k)


def _job_order(
    source: ViewSource, jobs: list[JobSummary] | None, warnings: list[str]
) -> list[JobSummary]:
    """The jobs shown, oldest summary first (so that comparing left to right is before/after)."""
    if jobs is None:
        assert source.job is not None
        jobs = [read_model(source.job_dir(source.job) / SUMMARY_FILE, JobSummary)]
    warnings += [
        f"left out a job whose job_id is not a directory name: {job.job_id!r}"
        for job in jobs
        if not plain_name(job.job_id)
    ]
    jobs = [job for job in jobs if plain_name(job.job_id)]

    def written(summary: JobSummary) -> float:
        try:
            return (source.job_dir(summary.job_id) / SUMMARY_FILE).stat().st_mtime
        except OSError:
            return 0.0

    return sorted(jobs, key=lambda summary: (written(summary), summary.job_id))


@dataclass(frozen=True)
class _JobResults:
    counted: Collected
    """The job's attempts with the verdicts it recorded (what its column counts)."""
    current: list[AttemptResult]
    """The same attempts as their result.json says today (what their pages show)."""
    warning: str | None


def _job_results(
    source: ViewSource, summary: JobSummary, everything: Collected | None
) -> _JobResults:
    """The job's attempts as its summary indexes them. When one was re-scored since (or its
    result is gone), the column keeps the status and score the job recorded for each."""
    try:
        collected = collect(source.job_dir(summary.job_id))
        return _JobResults(collected, collected.results, None)
    except ReportError as exc:
        if exc.code not in ("report_stale_result", "report_missing_result"):
            raise
        warning = (
            f"{exc.code}: {exc.message}. The job's column shows the verdicts it recorded; "
            "the attempt pages show today's."
        )
    by_id = {result.attempt_id: result for result in (everything or collect(source.root)).results}
    current, recorded = [], []
    for entry in summary.attempts:
        result = by_id.get(str(entry.get("attempt_id")))
        if result is None:
            continue
        current.append(result)
        if entry.get("status") in STATUSES:
            score = entry.get("score")
            update = {"status": entry["status"], "score": score if _is_number(score) else None}
            result = result.model_copy(update=update)
        recorded.append(result)
    return _JobResults(Collected(recorded, [summary], summary.k), current, warning)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _binding(row: ReportRow) -> tuple[str, str, str, str]:
    return row.agent, row.model, repr(sorted(row.agents.items())), repr(sorted(row.models.items()))


def _columns(
    report: Report, results: Iterable[AttemptResult], job_id: str | None, warning: str | None
) -> list[Column]:
    by_id = {result.attempt_id: result for result in results}
    cells: dict[tuple[str, str, str, str], dict[str, Cell]] = {}
    for row in report.tasks:
        attempts = tuple(_attempt_cell(ref, by_id) for ref in row.attempts)
        cells.setdefault(_binding(row), {})[str(row.task_id)] = Cell(attempts, row.metrics)
    return [
        Column(
            job_id=job_id,
            agent=row.agent,
            model=row.model,
            k=report.k,
            metrics=row.metrics,
            cells=cells.get(_binding(row), {}),
            warning=warning,
        )
        for row in sorted(report.overall, key=lambda row: (row.agent, row.model))
    ]


def _attempt_cell(ref: AttemptRef, by_id: dict[str, AttemptResult]) -> AttemptCell:
    result = by_id[ref.attempt_id]
    usage: Any = getattr(result, "usage", None)
    cost: Any = getattr(result, "cost", None)
    if (
        isinstance(usage, dict)
        and usage
        and all(isinstance(item, ModelUsage) for item in usage.values())
    ):
        summed = total_usage(usage.values())  # the gateway's record, per role
        if summed is not None:
            usage = summed.prompt_tokens + summed.completion_tokens
            cost = None if isinstance(summed.cost_usd, str) else summed.cost_usd
    return AttemptCell(
        attempt_id=ref.attempt_id,
        attempt=result.attempt,
        status=result.status,
        score=result.score,
        limit=result.limit,
        error=ref.error,
        tokens=tokens_of(usage),
        cost=cost_of(cost),
        failure_class=ref.failure_class,
    )
