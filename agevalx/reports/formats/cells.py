"""What the human-readable formats show in each column, as plain one-line text."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from agevalx.failures import infrastructure_lines
from agevalx.reports.models import AttemptRef, Report, ReportRow

KEY_PREFIX = 12
_INVISIBLE = frozenset("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


@dataclass(frozen=True)
class Column:
    """A column of the leaderboard: its header, its cell text, and whether it is a number."""

    header: str
    cell: Callable[[ReportRow], str]
    numeric: bool = False


def one_line(text: str) -> str:
    """Control characters, line breaks and bidi overrides from untrusted text become spaces."""
    return "".join(
        " " if unicodedata.category(char) in ("Cc", "Zl", "Zp") or char in _INVISIBLE else char
        for char in text
    )


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def limits(row: ReportRow) -> str:
    hit = row.metrics.limits
    return ", ".join(f"{name}={hit[name]}" for name in sorted(hit)) or "-"


def tokens(row: ReportRow) -> str:
    """`prompt/completion` tokens (`-` when no role used a model)."""
    usage = row.usage
    return "-" if usage is None else f"{usage.prompt_tokens}/{usage.completion_tokens}"


def judge_tokens(row: ReportRow) -> str:
    """The evaluators' (LLM judges') `prompt/completion` tokens, apart from the agents'."""
    usage = row.evaluator_usage
    return "-" if usage is None else f"{usage.prompt_tokens}/{usage.completion_tokens}"


def judge_cost(row: ReportRow) -> str:
    return dollars(row.evaluator_usage.cost_usd if row.evaluator_usage else None)


def dollars(value: float | str | None) -> str:
    if value is None:
        return "-"
    return value if isinstance(value, str) else f"{value:.6f}"


def status(attempt: AttemptRef) -> str:
    """`PASS`, ..., or `ERROR infrastructure`: an ERROR with its failure class."""
    if attempt.failure_class is None:
        return attempt.status
    return f"{attempt.status} {attempt.failure_class}"


def config(row: ReportRow) -> str:
    return ", ".join(digest[:KEY_PREFIX] for digest in row.config_digests)


def columns(report: Report, scope: str) -> list[Column]:
    """The columns of the overall leaderboard (`overall`) or of the per-task table (`task`)."""
    k = report.k
    lead = [Column("task", lambda row: row.task_id or "")] if scope == "task" else []
    names = [Column("agent", lambda row: row.agent), Column("model", lambda row: row.model)]
    if scope == "overall":
        names.append(Column("tasks", lambda row: str(row.tasks), numeric=True))
    counts = [
        Column("n", lambda row: str(row.metrics.n), numeric=True),
        Column("PASS", lambda row: str(row.metrics.passed), numeric=True),
        Column("FAIL", lambda row: str(row.metrics.failed), numeric=True),
        Column("ERROR", lambda row: str(row.metrics.errors), numeric=True),
        *(
            [Column("DONE", lambda row: str(row.metrics.done), numeric=True)]
            if any(row.metrics.done for row in report.tasks)
            else []
        ),
        *(
            [Column("infra", lambda row: str(row.metrics.infrastructure), numeric=True)]
            if report.infrastructure
            else []
        ),
        Column("pass rate", lambda row: number(row.metrics.pass_rate), numeric=True),
        Column("± s.e.", lambda row: number(row.pass_rate_stderr), numeric=True),
        Column(f"pass@{k}", lambda row: number(row.metrics.pass_at_k), numeric=True),
        Column(f"pass^{k}", lambda row: number(row.metrics.pass_hat_k), numeric=True),
        Column("avg score", lambda row: number(row.metrics.avg_score), numeric=True),
        Column("limits hit", limits),
        Column("tokens in/out", tokens, numeric=True),
        Column("cost $", lambda row: dollars(row.usage.cost_usd if row.usage else None), True),
        Column("cost/PASS $", lambda row: dollars(row.cost_per_pass), numeric=True),
        *(
            [
                Column("judge tokens in/out", judge_tokens, numeric=True),
                Column("judge cost $", judge_cost, numeric=True),
            ]
            if any(row.evaluator_usage for row in report.tasks)
            else []
        ),
        Column("config", config),
    ]
    return [*lead, *names, *counts]


def alerts(report: Report) -> list[str]:
    """The loud lines: infrastructure failures, left out of the scores (or counted)."""
    codes = (code for code, count in report.infrastructure.items() for _ in range(count))
    return infrastructure_lines(codes, counted=report.count_infra_as_fail)


def heading(report: Report) -> list[str]:
    """The lines under the title: datasets, k, attempts, the jobs read."""
    attempts = sum(len(row.attempts) for row in report.tasks)
    tasks = len({row.task_id for row in report.tasks})
    lines = [
        f"dataset {', '.join(report.datasets)}: {plural(attempts, 'attempt')} of "
        f"{plural(tasks, 'task')}, k={report.k} for pass@k and pass^k"
    ]
    lines += [f"job {job.job_id} (k={job.k}), summary key {job.summary_key}" for job in report.jobs]
    if report.provenance is not None:
        lines.append(f"rendered by ageval {report.provenance.ageval}")
        lines += [
            f"dataset {ref.id} version {ref.version or '-'}, digest {ref.digest}"
            for ref in report.provenance.datasets
        ]
    return [one_line(line) for line in lines]
