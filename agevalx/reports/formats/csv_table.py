"""`--format csv`: one line per row (overall rows first); node keys as space-separated hex,
one per attempt, in the row's attempt order."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable

from agevalx.reports.models import Report, ReportRow

_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")


def text(value: str) -> str:
    """A text cell a spreadsheet shows as text: formula-like starts get a leading `'`."""
    return "'" + value if len(value) > 1 and value.startswith(_FORMULA_STARTS) else value


def _number(value: float | None) -> str:
    return "" if value is None else repr(value)


def _cost(value: float | str | None) -> str:
    return value if isinstance(value, str) else _number(value)


def _judge(row: ReportRow, name: str) -> str:
    usage = row.evaluator_usage
    return "" if usage is None else str(getattr(usage, name))


def _keys(row: ReportRow, pick: Callable[..., str | None]) -> str:
    return " ".join(pick(attempt) or "-" for attempt in row.attempts)


FIELDS: dict[str, Callable[[ReportRow], str]] = {
    "scope": lambda row: row.scope,
    "task": lambda row: text(row.task_id or ""),
    "agent": lambda row: text(row.agent),
    "model": lambda row: text(row.model),
    "tasks": lambda row: str(row.tasks),
    "n": lambda row: str(row.metrics.n),
    "passed": lambda row: str(row.metrics.passed),
    "failed": lambda row: str(row.metrics.failed),
    "errors": lambda row: str(row.metrics.errors),
    "done": lambda row: str(row.metrics.done),
    "infrastructure": lambda row: str(row.metrics.infrastructure),
    "pass_rate": lambda row: _number(row.metrics.pass_rate),
    "pass_at_k": lambda row: _number(row.metrics.pass_at_k),
    "pass_hat_k": lambda row: _number(row.metrics.pass_hat_k),
    "avg_score": lambda row: _number(row.metrics.avg_score),
    "limits": lambda row: text(
        ";".join(f"{name}={count}" for name, count in sorted(row.metrics.limits.items()))
    ),
    "prompt_tokens": lambda row: str(row.usage.prompt_tokens) if row.usage else "",
    "completion_tokens": lambda row: str(row.usage.completion_tokens) if row.usage else "",
    "cached_tokens": lambda row: str(row.usage.cached_tokens) if row.usage else "",
    "requests": lambda row: str(row.usage.requests) if row.usage else "",
    "cost_usd": lambda row: _cost(row.usage.cost_usd if row.usage else None),
    "cost_per_pass": lambda row: _cost(row.cost_per_pass),
    "evaluator_prompt_tokens": lambda row: _judge(row, "prompt_tokens"),
    "evaluator_completion_tokens": lambda row: _judge(row, "completion_tokens"),
    "evaluator_requests": lambda row: _judge(row, "requests"),
    "evaluator_cost_usd": lambda row: _cost(
        row.evaluator_usage.cost_usd if row.evaluator_usage else None
    ),
    "config_digests": lambda row: text(" ".join(row.config_digests)),
    "run_keys": lambda row: text(_keys(row, lambda a: a.run_key)),
    "evaluate_keys": lambda row: text(_keys(row, lambda a: a.evaluate_key)),
}


def render_csv(report: Report) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["k", *FIELDS])
    for row in [*report.overall, *report.tasks]:
        writer.writerow([str(report.k), *(cell(row) for cell in FIELDS.values())])
    return buffer.getvalue()
