"""`--format json`: the report document (`ageval.report/1`), keys sorted."""

from __future__ import annotations

import json

from agevalx.reports.models import Report


def render_json(report: Report) -> str:
    document = report.model_dump(mode="json")
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
