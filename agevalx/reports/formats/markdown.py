"""`--format markdown`: GitHub-flavoured tables; each row's node keys in a footnote."""

from __future__ import annotations

import re

from agevalx.reports.formats.cells import alerts, columns, heading, one_line, status
from agevalx.reports.models import AttemptRef, Report, ReportRow

_SPECIAL = re.compile(r"([\\`*_\[\]|~!#])")


def escape(text: str) -> str:
    """Untrusted text as literal inline markdown: no HTML, links, emphasis or cell breaks."""
    flat = one_line(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SPECIAL.sub(r"\\\1", flat)


def _table(report: Report, scope: str, rows: list[ReportRow], first_note: int) -> list[str]:
    chosen = columns(report, scope)
    header = [escape(column.header) for column in chosen] + ["keys"]
    rule = ["---:" if column.numeric else "---" for column in chosen] + ["---"]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    for number, row in enumerate(rows, start=first_note):
        cells = [escape(column.cell(row)) for column in chosen] + [f"[^{number}]"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _attempt_line(attempt: AttemptRef) -> str:
    score = "" if attempt.score is None else f" score {attempt.score:g}"
    extra = "".join(f", {escape(text)}" for text in (attempt.limit, attempt.error) if text)
    return (
        f"    - {escape(attempt.attempt_id)} ({status(attempt)}{score}{extra}): "
        f"run {escape(attempt.run_key or '-')}, evaluate {escape(attempt.evaluate_key or '-')}"
    )


def _config_line(number: int, row: ReportRow) -> str:
    return f"[^{number}]: config digest {', '.join(escape(d) for d in row.config_digests)}"


def _task_note(number: int, row: ReportRow) -> list[str]:
    return [_config_line(number, row), *(_attempt_line(attempt) for attempt in row.attempts)]


def _overall_note(number: int, row: ReportRow, report: Report, first_task_note: int) -> list[str]:
    """An overall row points at the footnotes of its own task rows, which list the keys."""
    own = [
        f"[^{task_number}]"
        for task_number, task in enumerate(report.tasks, start=first_task_note)
        if (task.agents, task.models) == (row.agents, row.models)
    ]
    return [_config_line(number, row), f"    - attempts: see {', '.join(own)}"]


def render_markdown(report: Report) -> str:
    first_task_note = len(report.overall) + 1
    lines = ["# ageval report", ""]
    lines += [escape(line) + "  " for line in heading(report)]
    lines += [f"**{escape(line)}**  " for line in alerts(report)]
    lines += ["", "## Leaderboard (all tasks)", ""]
    lines += _table(report, "overall", report.overall, 1)
    lines += ["", "## Per task", ""]
    lines += _table(report, "task", report.tasks, first_task_note)
    lines.append("")
    for number, row in enumerate(report.overall, start=1):
        lines += _overall_note(number, row, report, first_task_note)
    for number, row in enumerate(report.tasks, start=first_task_note):
        lines += _task_note(number, row)
    return "\n".join(lines) + "\n"
