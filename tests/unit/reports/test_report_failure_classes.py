"""`ageval report` shows the class of each ERROR and never scores an infrastructure one."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from agevalx.reports import build_report, render_report
from agevalx.reports.formats.markdown import escape
from agevalx.results.models import AttemptResult, ErrorInfo
from tests.unit.reports.builders import make_result, write_results

pytestmark = pytest.mark.unit


def _failed(task: str, attempt: int, code: str, message: str = "it failed") -> AttemptResult:
    result = make_result(task, attempt, "ERROR")
    error = ErrorInfo(code=code, stage="run", message=message)
    return result.model_copy(update={"error": error})


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """Task alpha, k=4: a PASS, an agent crash, and two infrastructure failures."""
    root = tmp_path / "dataset"
    write_results(
        root,
        [
            make_result("alpha", 0, "PASS", score=1.0),
            _failed("alpha", 1, "agent_crashed"),
            _failed("alpha", 2, "environment_lost", "<b>gone</b>"),
            _failed("alpha", 3, "model_upstream_unavailable"),
        ],
    )
    return root


def test_infrastructure_errors_are_counted_apart_and_not_scored(dataset: Path) -> None:
    report = build_report(dataset)
    (row,) = report.tasks
    assert (row.metrics.n, row.metrics.errors, row.metrics.infrastructure) == (2, 3, 2)
    assert row.metrics.pass_rate == 0.5
    assert report.infrastructure == {"environment_lost": 1, "model_upstream_unavailable": 1}
    assert report.overall[0].metrics.infrastructure == 2
    classes = [attempt.failure_class for attempt in row.attempts]
    assert classes == [None, "agent", "infrastructure", "infrastructure"]
    counted = build_report(dataset, count_infra_as_fail=True)
    assert (counted.tasks[0].metrics.n, counted.tasks[0].metrics.pass_rate) == (4, 0.25)
    assert counted.count_infra_as_fail


def test_json_carries_the_class_of_each_attempt(dataset: Path) -> None:
    document = json.loads(render_report(build_report(dataset), "json"))
    attempts = document["tasks"][0]["attempts"]
    classes = [attempt["class"] for attempt in attempts]
    assert classes == [None, "agent", "infrastructure", "infrastructure"]
    assert document["infrastructure"] == {"environment_lost": 1, "model_upstream_unavailable": 1}
    assert document["tasks"][0]["metrics"]["infrastructure"] == 2


LOUD = (
    "2 infrastructure failures, not scored (environment_lost×1, model_upstream_unavailable×1); "
    "--count-infra-as-fail counts them"
)


def test_table_has_an_infra_column_and_the_loud_line(dataset: Path) -> None:
    text = render_report(build_report(dataset), "table")
    assert LOUD in text.splitlines()
    assert "dataset acme/demo: 4 attempts of 1 task, k=4 for pass@k and pass^k" in text
    header = next(line for line in text.splitlines() if line.strip().startswith("agent"))
    assert "infra" in header.split()


def test_markdown_marks_the_class_of_each_error(dataset: Path) -> None:
    text = render_report(build_report(dataset), "markdown")
    assert f"**{escape(LOUD)}**  " in text
    assert "(ERROR infrastructure, environment\\_lost: &lt;b&gt;gone&lt;/b&gt;)" in text
    assert "(ERROR agent, agent\\_crashed: it failed)" in text


def test_html_shows_the_class_escaped_and_the_loud_line(dataset: Path) -> None:
    text = render_report(build_report(dataset), "html")
    assert '<td class="status-ERROR">ERROR infrastructure</td>' in text
    assert f'<p class="alert">{LOUD}</p>' in text
    assert "<b>gone</b>" not in text


def test_csv_has_an_infrastructure_count(dataset: Path) -> None:
    rows = list(csv.DictReader(io.StringIO(render_report(build_report(dataset), "csv"))))
    assert {row["scope"]: row["infrastructure"] for row in rows} == {"overall": "2", "task": "2"}


def test_a_report_without_infrastructure_failures_stays_as_it_was(tmp_path: Path) -> None:
    write_results(tmp_path / "d", [make_result("a", 0, "PASS"), _failed("a", 1, "agent_crashed")])
    report = build_report(tmp_path / "d")
    assert report.infrastructure == {}
    text = render_report(report, "table")
    assert "infra" not in text and "infrastructure" not in text
