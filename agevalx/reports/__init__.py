"""Reports: leaderboards of results, every number traceable to the node keys it came from.

report = build_report(Path("my-dataset"))          # or a job dir, or a summary.json
text = render_report(report, "markdown")           # table, markdown, csv, json, html
"""

from __future__ import annotations

from agevalx.reports.build import build_report
from agevalx.reports.errors import ReportError
from agevalx.reports.formats import render_report
from agevalx.reports.models import FORMATS, AttemptRef, JobRef, Report, ReportFormat, ReportRow
from agevalx.reports.output import save_report

__all__ = [
    "FORMATS",
    "AttemptRef",
    "JobRef",
    "Report",
    "ReportError",
    "ReportFormat",
    "ReportRow",
    "build_report",
    "render_report",
    "save_report",
]
