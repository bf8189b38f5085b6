"""`--format table`: the leaderboard as aligned plain-text tables (rich, no colour)."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from agevalx.reports.formats.cells import alerts, columns, heading, one_line
from agevalx.reports.models import Report, ReportRow

if TYPE_CHECKING:
    from rich.table import Table

WIDTH = 1000
"""Wide enough that every table has its natural width: the text never depends on a terminal."""


def _table(report: Report, title: str, scope: str, rows: list[ReportRow]) -> Table:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    chosen = columns(report, scope)
    for column in chosen:
        table.add_column(column.header, justify="right" if column.numeric else "left")
    for row in rows:
        table.add_row(*(Text(one_line(column.cell(row))) for column in chosen))
    return table


def render_table(report: Report) -> str:
    from rich.console import Console  # rich only when a table is printed, not on every run
    from rich.text import Text

    buffer = io.StringIO()
    console = Console(
        file=buffer, width=WIDTH, color_system=None, highlight=False, emoji=False, markup=False
    )
    for line in ["ageval report", *heading(report), *alerts(report)]:
        console.print(Text(line))
    console.print(_table(report, "Leaderboard (all tasks)", "overall", report.overall))
    console.print(_table(report, "Per task", "task", report.tasks))
    console.print(Text("node keys of every row: --format json, csv, markdown or html"))
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"
