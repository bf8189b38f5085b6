"""`ageval report` over a real job: the minimal demo run with the oracle, k=3, in Docker."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agevalx.cli import main
from agevalx.reports import FORMATS

pytestmark = pytest.mark.integration

DEMO = Path(__file__).resolve().parents[2] / "examples/datasets/minimal-demo"
TASK = "terminal-jsonl-agg"
Job = tuple[Path, dict[str, Any]]


def ageval(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert code == 0, captured.err + captured.out
    return captured.out


@pytest.fixture
def demo_job(copy_dataset: Callable[[Path], Path], capsys: pytest.CaptureFixture[str]) -> Job:
    dataset = copy_dataset(DEMO)
    outcome = json.loads(
        ageval(capsys, "run", str(dataset), "-k", "3", "--agent", "oracle", "--json")
    )
    return dataset, outcome


def test_every_format_reports_the_demo_job(
    demo_job: Job, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    dataset, _ = demo_job
    for output_format in FORMATS:
        target = tmp_path / f"report.{output_format}"
        ageval(capsys, "report", str(dataset), "--format", output_format, "--output", str(target))
        text = target.read_text()
        assert TASK in text and "oracle" in text, output_format
        assert ageval(capsys, "report", str(dataset), "--format", output_format) == text


def test_the_report_counts_the_job_and_traces_it_to_result_json_nodes(
    demo_job: Job, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset, outcome = demo_job
    report = json.loads(ageval(capsys, "report", str(dataset), "--format", "json"))

    (row,) = report["tasks"]
    assert report["k"] == 3
    assert (row["task_id"], row["agent"], row["model"]) == (TASK, "oracle", "-")
    metrics = row["metrics"]
    assert (metrics["n"], metrics["passed"], metrics["errors"]) == (3, 3, 0)
    assert (metrics["pass_at_k"], metrics["pass_hat_k"]) == (1.0, 1.0)
    assert [job["summary_key"] for job in report["jobs"]] == [outcome["summary"]["summary_key"]]
    for attempt, result in zip(row["attempts"], outcome["results"], strict=True):
        keys = {node["kind"]: node["key"] for node in result["nodes"]}
        assert (attempt["run_key"], attempt["evaluate_key"]) == (keys["run"], keys["evaluate"])
        assert attempt["config_digest"] == result["config_digest"]


def test_the_job_directory_reports_the_same_rows_as_the_dataset(
    demo_job: Job, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset, outcome = demo_job
    job_dir = Path(outcome["summary_path"]).parent

    by_job = ageval(capsys, "report", str(job_dir), "--format", "csv")
    by_dataset = ageval(capsys, "report", str(dataset), "--format", "csv")

    assert list(csv.DictReader(io.StringIO(by_job))) == list(
        csv.DictReader(io.StringIO(by_dataset))
    )


def test_a_fully_cached_rerun_gives_a_byte_identical_report(
    demo_job: Job, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset, _ = demo_job
    before = {f: ageval(capsys, "report", str(dataset), "--format", f) for f in FORMATS}

    rerun = json.loads(
        ageval(capsys, "run", str(dataset), "-k", "3", "--agent", "oracle", "--json")
    )

    assert rerun["counts"]["computed"] == 0
    assert {f: ageval(capsys, "report", str(dataset), "--format", f) for f in FORMATS} == before
