"""What `ageval view` shows: a dataset directory, or one job directory of it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agevalx.reports.sources import RESULT_FILE, SUMMARY_FILE
from agevalx.results.paths import RUNS_DIR, SUITE_RUNS_DIR
from agevalx.view.errors import ViewError

STATE_DIR = ".ageval"


@dataclass(frozen=True)
class ViewSource:
    """The dataset whose results are shown, and the one job to show (None: every job)."""

    root: Path
    """The dataset directory (holds `.ageval/`)."""
    job: str | None
    """A job id (a directory under `.ageval/suite-runs/`), when a job directory was given."""
    cache_dir: Path
    """The cache the node keys are looked up in (it may not exist)."""

    @property
    def state_dir(self) -> Path:
        """`<dataset>/.ageval`: the only dataset directory whose files are served raw."""
        return self.root / STATE_DIR

    @property
    def runs_dir(self) -> Path:
        return self.root / RUNS_DIR

    def job_dir(self, job_id: str) -> Path:
        return self.root / SUITE_RUNS_DIR / job_id


def resolve_source(path: Path, cache_dir: Path) -> ViewSource:
    """The dataset (or job) at `path`; refuses a path with no results to show."""
    if not path.is_dir():
        raise ViewError(
            "view_source_not_found",
            f"{path} is not a directory",
            file=path.as_posix(),
            hint="give a dataset directory or a job directory (.ageval/suite-runs/<job_id>)",
        )
    resolved = path.resolve()
    if resolved.parent.parent.name == STATE_DIR and resolved.parent.name == "suite-runs":
        if not (resolved / SUMMARY_FILE).is_file():
            raise ViewError(
                "view_no_results",
                f"the job directory has no {SUMMARY_FILE}",
                file=path.as_posix(),
                hint="run the job again with `ageval run`",
            )
        return ViewSource(root=resolved.parents[2], job=resolved.name, cache_dir=cache_dir)
    if not any((resolved / RUNS_DIR).glob(f"*/{RESULT_FILE}")):
        raise ViewError(
            "view_no_results",
            f"no results under {(path / RUNS_DIR).as_posix()}",
            file=path.as_posix(),
            hint="run `ageval run <dataset>` first, or give a job directory",
        )
    return ViewSource(root=resolved, job=None, cache_dir=cache_dir)
