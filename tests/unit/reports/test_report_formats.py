"""Every format: parseable, traceable to node keys, byte-identical for the same results, and
safe with hostile strings from evaluators and task files."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from agevalx.reports import FORMATS, Report, build_report, render_report
from tests.unit.reports.builders import make_result, mixed_results, write_results

pytestmark = pytest.mark.unit

SCRIPT = "<script>alert('x')</script>"
FORMULA = "=cmd|' /C calc'!A0"
UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def hostile_results() -> list:
    return [
        make_result("pipe|and\nnewline", 0, "PASS", agent=SCRIPT, model=FORMULA, score=1.0),
        make_result(
            "pipe|and\nnewline",
            1,
            "ERROR",
            agent=SCRIPT,
            model=FORMULA,
            error='<img src=x onerror="alert(1)"> **bold** [link](javascript:alert(1))',
        ),
        make_result("plain", 0, "FAIL", agent="\x1b[31mred\x1b[0m", model="@SUM(1+1)"),
    ]


@pytest.fixture
def hostile(tmp_path: Path) -> Report:
    write_results(tmp_path / "hostile", hostile_results())
    return build_report(tmp_path / "hostile")


@pytest.mark.parametrize("output_format", FORMATS)
def test_same_results_give_byte_identical_reports(tmp_path: Path, output_format: str) -> None:
    results = mixed_results()
    write_results(tmp_path / "one", results)
    write_results(tmp_path / "two", list(reversed(results)))  # other order, other place

    first = render_report(build_report(tmp_path / "one"), output_format)  # type: ignore[arg-type]
    again = render_report(build_report(tmp_path / "one"), output_format)  # type: ignore[arg-type]
    elsewhere = render_report(build_report(tmp_path / "two"), output_format)  # type: ignore[arg-type]

    assert first == again == elsewhere
    assert first.endswith("\n")


def test_json_is_the_report_document(dataset: Path) -> None:
    report = build_report(dataset)

    document = json.loads(render_report(report, "json"))

    assert document["format"] == "ageval.report/1"
    assert Report.model_validate(document) == report


def test_csv_rows_carry_config_digest_and_node_keys(dataset: Path) -> None:
    report = build_report(dataset)

    rows = list(csv.DictReader(io.StringIO(render_report(report, "csv"))))

    assert [row["scope"] for row in rows] == ["overall"] * 2 + ["task"] * 4
    for row, source in zip(rows, [*report.overall, *report.tasks], strict=True):
        assert row["config_digests"].split() == source.config_digests
        assert row["run_keys"].split() == [a.run_key for a in source.attempts]
        assert row["evaluate_keys"].split() == [a.evaluate_key for a in source.attempts]
        assert int(row["n"]) == source.metrics.n and row["k"] == "3"
    assert rows[0]["pass_rate"] == repr(report.overall[0].metrics.pass_rate)
    assert rows[0]["avg_score"] == ""  # none of pi's attempts has a score


def test_markdown_has_a_footnote_with_the_keys_of_every_row(dataset: Path) -> None:
    report = build_report(dataset)

    text = render_report(report, "markdown")

    table_rows = [line for line in text.splitlines() if line.startswith("| ") and "[^" in line]
    assert len(table_rows) == len(report.overall) + len(report.tasks)
    for number, row in enumerate(report.tasks, start=len(report.overall) + 1):
        assert f"[^{number}]" in table_rows[number - 1]
        note = text[text.index(f"\n[^{number}]: ") :]
        for attempt in row.attempts:
            assert f"run {attempt.run_key}, evaluate {attempt.evaluate_key}" in note
        assert row.config_digests[0] in note.splitlines()[1]


def test_html_is_one_self_contained_page_with_keys_in_details_and_tooltips(
    dataset: Path,
) -> None:
    report = build_report(dataset)

    page = render_report(report, "html")

    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "<style>" in page
    assert not re.search(r"<script|<link|\bsrc=|@import|url\(|https?://", page, re.IGNORECASE)
    assert "default-src 'none'" in page
    assert page.count("<details") == len(report.overall) + len(report.tasks)
    for row in [*report.overall, *report.tasks]:
        assert f'title="config digest {", ".join(row.config_digests)}"' in page
        for attempt in row.attempts:
            assert attempt.run_key in page and attempt.evaluate_key in page


def test_table_shows_every_row_and_the_k_in_its_headers(dataset: Path) -> None:
    text = render_report(build_report(dataset), "table")

    assert "pass@3" in text and "pass^3" in text
    assert len([line for line in text.splitlines() if " oracle " in line]) == 3
    assert all(line == line.rstrip() for line in text.splitlines())


def test_html_escapes_hostile_strings(hostile: Report) -> None:
    page = render_report(hostile, "html")

    assert "<script" not in page.lower()
    assert "<img" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page
    assert "\x1b" not in page


def test_markdown_escapes_hostile_strings_and_keeps_one_line_per_row(hostile: Report) -> None:
    text = render_report(hostile, "markdown")

    assert "<script" not in text and "<img" not in text and "\x1b" not in text
    assert not re.search(r"(?<!\\)\]\(", text)  # no link syntax survives
    assert "\\*\\*bold\\*\\*" in text
    assert "pipe\\|and newline" in text
    for block in text.split("\n\n"):
        lines = [line for line in block.splitlines() if line.startswith("| ")]
        if lines:  # every row of a table has as many cells as its header
            assert {len(UNESCAPED_PIPE.split(line)) for line in lines} == {
                len(UNESCAPED_PIPE.split(lines[0]))
            }
    table_lines = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(table_lines) == 4 + len(hostile.overall) + len(hostile.tasks)


def test_csv_defuses_formulas_and_round_trips_hostile_text(hostile: Report) -> None:
    rows = list(csv.DictReader(io.StringIO(render_report(hostile, "csv"))))

    models = {row["model"] for row in rows}
    assert models == {"'" + FORMULA, "'@SUM(1+1)"}
    assert {row["task"] for row in rows if row["scope"] == "task"} == {"pipe|and\nnewline", "plain"}
    assert {row["agent"] for row in rows} == {SCRIPT, "\x1b[31mred\x1b[0m"}


def test_table_drops_control_characters_and_line_breaks(hostile: Report) -> None:
    text = render_report(hostile, "table")

    assert "\x1b" not in text
    assert "pipe|and newline" in text
    assert not any(line.startswith("newline") for line in text.splitlines())


def test_a_dataset_copied_elsewhere_reports_the_same_bytes(dataset: Path, tmp_path: Path) -> None:
    shutil.copytree(dataset, tmp_path / "copy")

    for output_format in FORMATS:
        assert render_report(build_report(dataset), output_format) == render_report(
            build_report(tmp_path / "copy"), output_format
        )


def test_done_attempts_are_counted_and_shown_only_when_there_are_some(
    tmp_path: Path, dataset: Path
) -> None:
    results = [make_result("h", 0, "DONE", score=0.5), make_result("h", 1, "PASS", score=1.0)]
    write_results(tmp_path / "harbor", results)
    report = build_report(tmp_path / "harbor")
    lines = render_report(report, "csv").splitlines()
    row = dict(zip(lines[0].split(","), lines[1].split(","), strict=True))
    assert (row["done"], row["passed"], row["pass_rate"]) == ("1", "1", "1.0")
    assert "| DONE |" in render_report(report, "markdown")
    assert "| DONE |" not in render_report(build_report(dataset), "markdown")
