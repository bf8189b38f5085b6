"""Where a report's results come from, and the coded errors when they cannot be read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agevalx.errors import AgevalError, UsageError
from agevalx.reports import ReportError, build_report
from tests.unit.reports.builders import make_result, write_job, write_results

pytestmark = pytest.mark.unit


def error_of(source: Path, job: str | None = None) -> AgevalError:
    with pytest.raises(AgevalError) as caught:
        build_report(source, job=job)
    return caught.value


def test_a_dataset_report_counts_every_result_and_lists_every_job(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    first = [make_result("alpha", attempt) for attempt in range(2)]
    write_job(root, first, k=2, job_id="job-a")
    write_results(root, [make_result("beta", 0, "FAIL")])

    report = build_report(root)

    assert [row.task_id for row in report.tasks] == ["alpha", "beta"]
    assert [job.job_id for job in report.jobs] == ["job-a"]
    assert report.k == 2  # the largest attempt index + 1


def test_a_job_dir_and_its_summary_json_give_the_same_report(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    job_dir = write_job(root, [make_result("alpha", a) for a in range(3)], k=3)
    write_results(root, [make_result("beta", 0)])  # outside the job: not counted

    from_dir = build_report(job_dir)
    from_file = build_report(job_dir / "summary.json")
    from_option = build_report(root, job="job-1")

    assert from_dir == from_file == from_option
    assert [row.task_id for row in from_dir.tasks] == ["alpha"]
    assert from_dir.k == 3
    assert [job.job_id for job in from_dir.jobs] == ["job-1"]


def test_a_job_k_larger_than_its_attempts_leaves_pass_at_k_unknown(tmp_path: Path) -> None:
    job_dir = write_job(tmp_path / "ds", [make_result("alpha", 0)], k=5)

    row = build_report(job_dir).tasks[0]

    assert (row.metrics.n, row.metrics.pass_at_k, row.metrics.pass_hat_k) == (1, None, None)


def test_a_missing_source_is_report_source_not_found(tmp_path: Path) -> None:
    error = error_of(tmp_path / "nowhere")

    assert isinstance(error, ReportError)
    assert error.code == "report_source_not_found"


def test_a_directory_without_results_is_report_no_results_with_a_hint(tmp_path: Path) -> None:
    (tmp_path / "empty" / ".ageval" / "runs").mkdir(parents=True)

    error = error_of(tmp_path / "empty")

    assert error.code == "report_no_results"
    assert error.hint is not None and "ageval run" in error.hint


def test_an_unknown_job_is_report_unknown_job_naming_the_known_ones(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    write_job(root, [make_result("alpha", 0)], k=1, job_id="job-a")

    error = error_of(root, job="job-b")

    assert (error.code, error.field) == ("report_unknown_job", "--job")
    assert error.hint is not None and "job-a" in error.hint


@pytest.mark.parametrize("job", ["..", "../ds", "job-a/..", ""])
def test_a_job_name_cannot_leave_suite_runs(tmp_path: Path, job: str) -> None:
    root = tmp_path / "ds"
    write_job(root, [make_result("alpha", 0)], k=1, job_id="job-a")

    assert error_of(root, job=job).code == "report_unknown_job"


def test_job_option_with_a_job_source_is_a_usage_error(tmp_path: Path) -> None:
    job_dir = write_job(tmp_path / "ds", [make_result("alpha", 0)], k=1)

    error = error_of(job_dir, job="job-1")

    assert isinstance(error, UsageError)
    assert (error.code, error.exit_code) == ("report_job_conflict", 2)


@pytest.mark.parametrize(
    ("content", "field"),
    [("{not json", None), ('{"format": "ageval.result/1"}', "attempt_id")],
    ids=["broken-json", "missing-field"],
)
def test_an_unreadable_result_is_report_invalid_file_naming_it(
    dataset: Path, content: str, field: str | None
) -> None:
    broken = dataset / ".ageval/runs/zz-broken/result.json"
    broken.parent.mkdir(parents=True)
    broken.write_text(content)

    error = error_of(dataset)

    assert error.code == "report_invalid_file"
    assert error.file == broken.as_posix()
    assert error.field == field


def test_a_job_whose_result_is_gone_is_report_missing_result(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    results = [make_result("alpha", a) for a in range(2)]
    job_dir = write_job(root, results, k=2)
    shutil.rmtree(root / ".ageval/runs" / results[1].attempt_id)

    error = error_of(job_dir)

    assert error.code == "report_missing_result"
    assert error.hint is not None and "ageval run" in error.hint


def test_a_result_re_evaluated_after_the_job_is_report_stale_result(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    result = make_result("alpha", 0, "PASS")
    job_dir = write_job(root, [result], k=1)
    rescored = result.model_copy(update={"status": "FAIL"})
    write_results(root, [rescored])

    error = error_of(job_dir)

    assert error.code == "report_stale_result"
    assert error.file is not None and error.file.endswith(f"{result.attempt_id}/result.json")


def test_a_summary_entry_without_a_relative_result_path_is_invalid(tmp_path: Path) -> None:
    job_dir = write_job(tmp_path / "ds", [make_result("alpha", 0)], k=1)
    summary = json.loads((job_dir / "summary.json").read_text())
    summary["attempts"][0]["result"] = "/etc/passwd"
    (job_dir / "summary.json").write_text(json.dumps(summary))

    error = error_of(job_dir)

    assert (error.code, error.field) == ("report_invalid_file", "attempts")
