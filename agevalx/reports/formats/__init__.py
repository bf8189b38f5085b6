"""Rendering a report: one module per format, each a pure function of the report."""

from __future__ import annotations

from collections.abc import Callable

from agevalx.errors import UsageError
from agevalx.reports.formats.csv_table import render_csv
from agevalx.reports.formats.html_page import render_html
from agevalx.reports.formats.json_document import render_json
from agevalx.reports.formats.markdown import render_markdown
from agevalx.reports.formats.table import render_table
from agevalx.reports.models import FORMATS, Report, ReportFormat

RENDERERS: dict[str, Callable[[Report], str]] = {
    "table": render_table,
    "markdown": render_markdown,
    "csv": render_csv,
    "json": render_json,
    "html": render_html,
}


def render_report(report: Report, output_format: ReportFormat) -> str:
    """The report as text in `output_format`; the same report always gives the same text."""
    renderer = RENDERERS.get(output_format)
    if renderer is None:
        raise UsageError(
            "report_unknown_format",
            f"unknown report format {output_format!r}",
            field="--format",
            hint=f"use one of: {', '.join(FORMATS)}",
        )
    return renderer(report)
