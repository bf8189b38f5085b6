"""`ageval report` on the command line: formats on stdout, --output, --json, coded errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agevalx.cli import main
from agevalx.reports import FORMATS, build_report, render_report
from tests.unit.reports.builders import make_result, write_job

pytestmark = pytest.mark.unit


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, captured.out, captured.err


@pytest.mark.parametrize("output_format", FORMATS)
def test_each_format_is_printed_as_the_library_renders_it(
    capsys: pytest.CaptureFixture[str], dataset: Path, output_format: str
) -> None:
    code, out, err = run(capsys, "report", str(dataset), "--format", output_format)

    assert (code, err) == (0, "")
    assert out == render_report(build_report(dataset), output_format)  # type: ignore[arg-type]


def test_output_writes_the_file_and_says_where(
    capsys: pytest.CaptureFixture[str], dataset: Path, tmp_path: Path
) -> None:
    target = tmp_path / "out" / "report.html"

    code, out, _ = run(capsys, "report", str(dataset), "-f", "html", "-o", str(target))

    assert code == 0
    assert target.read_text() == render_report(build_report(dataset), "html")
    assert target.as_posix() in out


def test_json_prints_one_object_with_the_report(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = tmp_path / "ds"
    write_job(root, [make_result("alpha", a) for a in range(2)], k=2, job_id="job-a")

    code, out, _ = run(capsys, "report", str(root), "--job", "job-a", "--json")

    document = json.loads(out)
    assert code == 0 and document["ok"] is True and document["output"] is None
    assert document["report"]["k"] == 2
    assert [job["job_id"] for job in document["report"]["jobs"]] == ["job-a"]


def test_no_results_exits_1_with_the_code_and_a_hint(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(capsys, "report", str(tmp_path))

    assert (code, out) == (1, "")
    assert "[report_no_results]" in err and "ageval run" in err


def test_no_results_with_json_is_an_error_object(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(capsys, "report", str(tmp_path), "--json")

    assert code == 1
    assert json.loads(out)["error"]["code"] == "report_no_results"


def test_an_unknown_format_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], dataset: Path
) -> None:
    code, _, err = run(capsys, "report", str(dataset), "--format", "xml")

    assert code == 2
    assert "xml" in err


def test_job_with_a_job_directory_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    job_dir = write_job(tmp_path / "ds", [make_result("alpha", 0)], k=1)

    code, out, _ = run(capsys, "report", str(job_dir), "--job", "job-1", "--json")

    assert code == 2
    assert json.loads(out)["error"]["code"] == "report_job_conflict"
