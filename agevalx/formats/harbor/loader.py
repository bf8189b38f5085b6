"""Load a Harbor-format dataset (and/or a Harbor job config) into resolved task specs.

    job = load_harbor_tasks(Path("my-dataset"), "job.yaml")
    for spec in job.tasks: ...          # HarborTaskSpec, in run order
    for warning in job.warnings: ...    # declared-but-unapplied fields, ignored keys

Tasks come from `dataset_path` (a task directory, or a directory whose task children are
taken, sorted, others skipped: `harbor run -p`), then the job config's `datasets` and `tasks`.
Task directory names must be unique across all of them. Everything that would change what
the results mean is refused here, before any environment starts.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agevalx.formats.harbor import errors
from agevalx.formats.harbor.errors import HarborError, HarborWarning
from agevalx.formats.harbor.jobconfig import (
    LoadedJobConfig,
    check_refusals,
    read_job_config,
    unapplied_fields,
)
from agevalx.formats.harbor.models import JobConfig, JobDataset
from agevalx.formats.harbor.resolve import TaskContext, resolve_task
from agevalx.formats.harbor.spec import HarborJob, HarborTaskSpec, RunOverrides
from agevalx.formats.harbor.taskdir import (
    children_tasks,
    declares_task,
    is_harbor_task,
    read_task_text,
    skipped_warning,
    task_problem,
)

__all__ = ["is_harbor_task", "load_harbor_tasks"]


@dataclass(frozen=True)
class _Found:
    directory: Path
    source: str | None
    origin: str
    """Where the task was listed (for duplicate-name errors)."""


def _existing_dir(path: Path, field: str, file: str | None) -> Path:
    if not path.is_dir():
        raise HarborError(
            errors.DATASET_NOT_FOUND,
            f"{path} is not a directory",
            file=file,
            field=field,
            hint="give the local directory of a Harbor dataset or task",
        )
    return path


def _children(directory: Path, disabled: bool, warnings: list[HarborWarning]) -> list[Path]:
    """The task children of `directory`; children with a task.toml that are not tasks are
    skipped (as Harbor does) and reported, and when no child is a task the first one's
    problem is the error (a broken task.toml is not an empty dataset)."""
    tasks, skipped = children_tasks(directory, disable_verification=disabled)
    if skipped and not tasks:
        raise skipped[0]
    warnings += [skipped_warning(problem) for problem in skipped]
    return tasks


def _from_dataset_path(path: Path, disabled: bool, warnings: list[HarborWarning]) -> list[_Found]:
    _existing_dir(path, "dataset_path", None)
    if declares_task(path):
        problem = task_problem(path, disable_verification=disabled)
        if problem is not None:
            raise problem
        return [_Found(path, path.resolve().parent.name, "dataset_path")]
    source = path.resolve().name
    children = _children(path, disabled, warnings)
    return [_Found(child, source, "dataset_path") for child in children]


def _filtered(found: list[Path], entry: JobDataset, field: str, file: str | None) -> list[Path]:
    kept = found
    if entry.task_names:
        kept = [p for p in kept if any(fnmatch.fnmatch(p.name, g) for g in entry.task_names)]
        if not kept:
            raise HarborError(
                errors.NO_TASK_MATCHED,
                f"no task matched {entry.task_names} ({len(found)} tasks available, e.g. "
                f"{sorted(p.name for p in found)[:5]})",
                file=file,
                field=f"{field}.task_names",
            )
    if entry.exclude_task_names:
        patterns = entry.exclude_task_names
        kept = [p for p in kept if not any(fnmatch.fnmatch(p.name, g) for g in patterns)]
    if entry.n_tasks is not None:
        kept = kept[: entry.n_tasks]
    return kept


def _from_job(
    loaded: LoadedJobConfig, base: Path, disabled: bool, warnings: list[HarborWarning]
) -> list[_Found]:
    found: list[_Found] = []
    for index, entry in enumerate(loaded.config.datasets):
        field = f"datasets[{index}]"
        directory = _existing_dir(base / str(entry.path), f"{field}.path", loaded.file)
        listed = _children(directory, disabled, warnings)
        children = _filtered(listed, entry, field, loaded.file)
        source = directory.resolve().name
        found += [_Found(child, source, field) for child in children]
    for index, task in enumerate(loaded.config.tasks):
        directory = base / str(task.path)
        problem = task_problem(directory, disable_verification=disabled)
        if problem is not None and problem.code == errors.TASK_INVALID:
            raise problem
        if problem is not None:
            raise HarborError(
                errors.NOT_A_TASK,
                problem.message,
                file=loaded.file,
                field=f"tasks[{index}].path",
                hint=problem.hint,
            )
        found.append(_Found(directory, None, f"tasks[{index}]"))
    return found


def _unique(found: list[_Found]) -> list[_Found]:
    seen: dict[str, _Found] = {}
    for item in found:
        name = item.directory.resolve().name
        if name in seen:
            first = seen[name]
            raise HarborError(
                errors.DUPLICATE_TASK,
                f"task name {name!r} is listed twice: {first.directory} ({first.origin}) "
                f"and {item.directory} ({item.origin})",
                field=item.origin,
                hint="task directory names must be unique across dataset_path, datasets and tasks",
            )
        seen[name] = item
    return list(seen.values())


def _select(found: list[_Found], names: list[str] | None) -> list[_Found]:
    if names is None:
        return found
    by_name = {item.directory.resolve().name: item for item in found}
    missing = [name for name in names if name not in by_name]
    if missing:
        raise HarborError(
            errors.TASK_NOT_FOUND,
            f"no task named {', '.join(missing)}",
            field="select",
            hint=f"known tasks: {', '.join(sorted(by_name)[:10])}",
        )
    return [by_name[name] for name in dict.fromkeys(names)]


def _extra_instructions(job: JobConfig, base: Path, file: str | None) -> list[str]:
    texts: list[str] = []
    for index, raw in enumerate(job.extra_instruction_paths):
        path = (base / raw).expanduser()
        try:
            texts.append(read_task_text(path))
        except (OSError, HarborError) as exc:
            raise HarborError(
                errors.JOB_CONFIG_INVALID,
                f"cannot read the extra instruction file: {exc}",
                file=file,
                field=f"extra_instruction_paths[{index}]",
            ) from None
    return texts + list(job.extra_instructions)


def load_harbor_tasks(
    dataset_path: Path | None,
    job_config: Path | str | dict[str, Any] | LoadedJobConfig | None = None,
    *,
    overrides: RunOverrides | None = None,
    environ: Mapping[str, str] | None = None,
    base_dir: Path | None = None,
) -> HarborJob:
    """Resolve every task of a Harbor dataset and/or job config.

    `overrides` are the run's own settings (highest layer); `environ` (default: the process
    environment) resolves `${NAME}` templates; relative paths in the job config resolve
    against `base_dir` (default: the current directory, as with `harbor run -c`).
    Raises `HarborError` (coded) for anything refused; a task whose env template cannot be
    resolved is returned with `failure` set instead.
    """
    run = overrides or RunOverrides()
    if isinstance(job_config, LoadedJobConfig) or job_config is None:
        loaded = job_config
    else:
        loaded = read_job_config(job_config)
    job = loaded.config if loaded else JobConfig()
    warnings: list[HarborWarning] = []
    if loaded is not None:
        check_refusals(loaded)
        warnings += unapplied_fields(loaded)
    if dataset_path is None and not (job.datasets or job.tasks):
        raise HarborError(
            errors.NO_TASKS,
            "no dataset_path and no `datasets` or `tasks` in the job config",
            hint="give a Harbor dataset directory",
        )
    base = base_dir or Path.cwd()
    disabled = job.verifier.disable
    found: list[_Found] = []
    if dataset_path is not None:
        found += _from_dataset_path(dataset_path, disabled, warnings)
    found += _from_job(loaded, base, disabled, warnings) if loaded is not None else []
    context = TaskContext(
        job=job,
        run=run,
        environ=os.environ if environ is None else environ,
        extra_instructions=_extra_instructions(job, base, loaded.file if loaded else None),
    )
    specs: list[HarborTaskSpec] = []
    for item in _select(_unique(found), run.select):
        spec, task_warnings = resolve_task(item.directory, item.source, context)
        specs.append(spec)
        warnings += task_warnings
    if not specs:
        raise HarborError(errors.NO_TASKS, "no Harbor task found", field="dataset_path")
    return HarborJob(tasks=specs, warnings=warnings, verification_disabled=disabled)
