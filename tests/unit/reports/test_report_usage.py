"""Tokens and cost in every report format, summed per row; unknown costs stay unknown."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from agevalx.reports import FORMATS, build_report, render_report
from agevalx.results.usage import ModelUsage
from tests.unit.reports.builders import make_result, write_results

pytestmark = pytest.mark.unit


def _results() -> list:
    priced = ModelUsage(requests=2, prompt_tokens=20, completion_tokens=11, cost_usd=0.25)
    unpriced = ModelUsage(requests=1, prompt_tokens=7, completion_tokens=3, cost_usd="unknown")
    a = make_result("t1", 0, "PASS", agent="pi", model="m", score=1.0)
    b = make_result("t1", 1, "FAIL", agent="pi", model="m", score=0.0)
    c = make_result("t2", 0, "PASS", agent="pi", model="m", score=1.0)
    return [
        a.model_copy(update={"usage": {"solver": priced}}),
        b.model_copy(update={"usage": {"solver": priced}}),
        c.model_copy(update={"usage": {"solver": unpriced}}),
    ]


def test_rows_sum_tokens_and_cost_and_every_format_shows_them(tmp_path: Path) -> None:
    write_results(tmp_path / "ds", _results())
    report = build_report(tmp_path / "ds")
    t1, t2 = report.tasks
    assert t1.usage is not None and t1.usage.prompt_tokens == 40
    assert (t1.usage.cost_usd, t1.cost_per_pass) == (0.5, 0.5)
    assert t2.usage is not None and t2.usage.cost_usd == "unknown"
    (overall,) = report.overall
    assert overall.usage is not None and overall.usage.completion_tokens == 25
    assert overall.usage.cost_usd == "unknown" and overall.cost_per_pass == "unknown"
    for output_format in FORMATS:
        text = render_report(report, output_format)
        assert "40" in text and "unknown" in text, output_format
    rows = list(csv.DictReader(io.StringIO(render_report(report, "csv"))))
    by_task = {row["task"]: row for row in rows if row["scope"] == "task"}
    assert (by_task["t1"]["prompt_tokens"], by_task["t1"]["cost_usd"]) == ("40", "0.5")
    assert by_task["t2"]["cost_usd"] == "unknown"
    document = json.loads(render_report(report, "json"))
    assert document["tasks"][0]["usage"]["requests"] == 4
    markdown = render_report(report, "markdown")
    assert "tokens in/out" in markdown and "40/22" in markdown and "0.500000" in markdown


def test_the_evaluators_usage_is_its_own_section_in_every_format(tmp_path: Path) -> None:
    agent = ModelUsage(requests=2, prompt_tokens=20, completion_tokens=11, cost_usd=0.25)
    judge = ModelUsage(requests=1, prompt_tokens=123, completion_tokens=45, cost_usd=0.125)
    a = make_result("t1", 0, "PASS", agent="pi", model="m", score=1.0)
    b = make_result("t1", 1, "FAIL", agent="pi", model="m", score=0.0)
    results = [
        a.model_copy(update={"usage": {"solver": agent}, "evaluator_usage": {"judge": judge}}),
        b.model_copy(update={"usage": {"solver": agent}, "evaluator_usage": {"judge": judge}}),
    ]
    write_results(tmp_path / "ds", results)
    report = build_report(tmp_path / "ds")
    (row,) = report.tasks
    assert row.usage is not None and row.usage.prompt_tokens == 40, "the agents' alone"
    assert row.evaluator_usage is not None and row.evaluator_usage.prompt_tokens == 246
    assert row.evaluator_usage.cost_usd == 0.25 and row.cost_per_pass == 0.5
    (overall,) = report.overall
    assert overall.evaluator_usage is not None and overall.evaluator_usage.requests == 2
    for output_format in FORMATS:
        assert "246" in render_report(report, output_format), output_format
    rows = list(csv.DictReader(io.StringIO(render_report(report, "csv"))))
    task = next(row for row in rows if row["scope"] == "task")
    assert (task["evaluator_prompt_tokens"], task["evaluator_cost_usd"]) == ("246", "0.25")
    assert task["prompt_tokens"] == "40"
    markdown = render_report(report, "markdown")
    assert "judge tokens in/out" in markdown and "246/90" in markdown
