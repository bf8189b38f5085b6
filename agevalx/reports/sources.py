"""Finding the results a report covers: a dataset's attempts, or the attempts of one job."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agevalx.errors import UsageError
from agevalx.reports.errors import ReportError
from agevalx.results.models import AttemptResult, JobSummary
from agevalx.results.paths import RUNS_DIR, SUITE_RUNS_DIR

SUMMARY_FILE = "summary.json"
RESULT_FILE = "result.json"
RERUN_HINT = "run `ageval run <dataset>` first"

Model = TypeVar("Model", bound=BaseModel)


@dataclass(frozen=True)
class Collected:
    """The attempts a report counts, the job summaries read, and the job's k if one job."""

    results: list[AttemptResult]
    jobs: list[JobSummary]
    k: int | None


def collect(source: Path, job: str | None = None) -> Collected:
    """Results of a dataset dir (optionally one `job` of it), a job dir, or a summary.json."""
    if not source.exists():
        raise ReportError(
            "report_source_not_found",
            f"{source} does not exist",
            file=source.as_posix(),
            hint="give a dataset directory, a job directory or a summary.json",
        )
    summary = _summary_path(source)
    if summary is not None:
        if job is not None:
            raise UsageError(
                "report_job_conflict",
                "--job selects a job of a dataset directory; the source is already a job",
                field="--job",
            )
        return _from_job(summary)
    if job is not None:
        return _from_job(_job_summary_path(source, job))
    return _from_dataset(source)


def _summary_path(source: Path) -> Path | None:
    if source.is_file():
        return source
    candidate = source / SUMMARY_FILE
    return candidate if candidate.is_file() else None


def _job_summary_path(dataset: Path, job: str) -> Path:
    suite_runs = dataset / SUITE_RUNS_DIR
    path = suite_runs / job / SUMMARY_FILE
    if "/" in job or job in ("", ".", "..") or not path.is_file():
        known = sorted(p.parent.name for p in suite_runs.glob(f"*/{SUMMARY_FILE}"))
        raise ReportError(
            "report_unknown_job",
            f"no job {job!r} under {suite_runs.as_posix()}",
            field="--job",
            hint=f"known jobs: {', '.join(known)}" if known else RERUN_HINT,
        )
    return path


def _from_dataset(dataset: Path) -> Collected:
    paths = sorted((dataset / RUNS_DIR).glob(f"*/{RESULT_FILE}"))
    if not paths:
        raise ReportError(
            "report_no_results",
            f"no results under {(dataset / RUNS_DIR).as_posix()}",
            file=dataset.as_posix(),
            hint=RERUN_HINT,
        )
    summaries = sorted((dataset / SUITE_RUNS_DIR).glob(f"*/{SUMMARY_FILE}"))
    return Collected(
        results=[read_model(path, AttemptResult) for path in paths],
        jobs=[read_model(path, JobSummary) for path in summaries],
        k=None,
    )


def _from_job(summary_path: Path) -> Collected:
    summary = read_model(summary_path, JobSummary)
    results = [_indexed_result(summary_path, entry) for entry in summary.attempts]
    if not results:
        raise ReportError(
            "report_no_results",
            f"the job {summary.job_id} indexes no attempts",
            file=summary_path.as_posix(),
            hint=RERUN_HINT,
        )
    return Collected(results=results, jobs=[summary], k=summary.k)


def _indexed_result(summary_path: Path, entry: dict[str, Any]) -> AttemptResult:
    """The result.json an entry of a summary's attempt index names, checked against it."""
    relative = entry.get("result")
    if not isinstance(relative, str) or Path(relative).is_absolute():
        raise ReportError(
            "report_invalid_file",
            f"an attempt of the index has no relative `result` path: {entry!r}"[:300],
            file=summary_path.as_posix(),
            field="attempts",
        )
    path = summary_path.parent / relative
    if not path.is_file():
        raise ReportError(
            "report_missing_result",
            f"the job indexes {relative}, which does not exist",
            file=summary_path.as_posix(),
            hint="re-run the job with `ageval run` to write its results again",
        )
    result = read_model(path, AttemptResult)
    indexed = (entry.get("attempt_id"), entry.get("status"), entry.get("score"))
    if indexed != (result.attempt_id, result.status, result.score):
        raise ReportError(
            "report_stale_result",
            f"{result.attempt_id} was re-evaluated after this job: its result.json says "
            f"{result.status} where the job recorded {entry.get('status')}",
            file=path.as_posix(),
            hint="re-run the job with `ageval run` to refresh its summary, or report the dataset",
        )
    return result


def read_model(path: Path, model: type[Model]) -> Model:
    """Parse a result.json or summary.json, or say which file is broken and how."""
    try:
        return model.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise ReportError(
            "report_invalid_file", f"cannot read it: {exc.strerror}", file=path.as_posix()
        ) from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or None
        raise ReportError(
            "report_invalid_file",
            f"not a valid {model.__name__}: {first['msg']}",
            file=path.as_posix(),
            field=where,
        ) from None
