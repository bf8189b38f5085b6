"""Task formats: how a directory of tasks becomes a `Dataset` the pipeline plans over.

Two formats are known, each in its folder: ageval's (ageval.yaml, `formats/ageval/format.py`)
and Harbor's (task.toml, `formats/harbor/format.py`). Each provides a `Dataset` (tasks, locks)
and a `TaskRuntime` (the hooks the one attempt runner and evaluator call); see
`formats/base.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agevalx.errors import UsageError

if TYPE_CHECKING:
    from agevalx.formats.base import Dataset, FormatFigures, FormatOptions, LintReading
    from agevalx.lockfile.request import BindingRequest
    from agevalx.results.models import JobSummary


def open_dataset(
    path: Path | None, binding: BindingRequest, harbor: FormatOptions | None = None
) -> Dataset:
    """The dataset at `path` in its format (ageval.yaml: ageval; task.toml tasks or a Harbor
    job config: Harbor), opened for `binding`. Raises coded errors for what is not one."""
    from agevalx.formats.ageval.format import is_ageval_dataset, open_ageval

    if path is not None and is_ageval_dataset(path):
        if harbor is not None:
            raise UsageError(
                "harbor_options_on_ageval_dataset",
                "--job-config, --env-params, --execution-params, --dataset-name, "
                "--primary-metric and --attempt-strategy apply to Harbor datasets only",
                field="DATASET",
                hint="an ageval dataset is configured by ageval.yaml, task.yaml and profiles.yaml",
            )
        return open_ageval(path, binding)
    # The Harbor format's runtime (and the agents and Docker SDK it drives) only for a
    # dataset that is not ageval's.
    from agevalx.formats.harbor.format import open_harbor
    from agevalx.formats.harbor.options import HarborOptions

    if harbor is not None and not isinstance(harbor, HarborOptions):
        raise TypeError(f"Harbor datasets take HarborOptions, not {type(harbor).__name__}")
    found = open_harbor(path, harbor, binding)
    if found is not None:
        return found
    if path is None:
        raise UsageError(
            "dataset_required",
            "give a dataset directory (or a Harbor --job-config that lists tasks)",
            field="DATASET",
        )
    return open_ageval(path, binding)


def summary_figures(summary: JobSummary) -> list[FormatFigures]:
    """What each format added to a job's summary (Harbor: its `harbor` section), as the
    recap and the viewer show it."""
    section = (summary.model_extra or {}).get("harbor")
    if section is None:
        return []
    from agevalx.formats.harbor.summary import summary_figures as harbor_figures

    return [harbor_figures(section, summary.k)]


def lint_reading(name: str) -> LintReading:
    """How `ageval lint` reads the task directories of format `name` (`harbor`)."""
    if name != "harbor":
        raise ValueError(f"no task format {name!r} is read by its own lint reader")
    from agevalx.formats.harbor.lint import READING

    return READING
