"""Harbor job configs (`harbor run -c`): read, refuse what changes results, report the rest.

A job config is a YAML or JSON file, inline JSON text, or a dict. Refused before any
environment starts: `n_attempts != 1`, several `agents`, registry/package/git sources,
`install_only: true`, and a verifier `import_path` whose class cannot be imported (or is not
a Harbor `BaseVerifier`). Every other declared field that ageval does not apply is returned
as a `harbor_field_unapplied` warning.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from agevalx.formats.harbor import errors
from agevalx.formats.harbor.errors import HarborError, HarborWarning
from agevalx.formats.harbor.models import JobConfig

_TOP_APPLIED = {
    "schema_version",
    "n_attempts",
    "install_only",
    "timeout_multiplier",
    "agent_timeout_multiplier",
    "verifier_timeout_multiplier",
    "environment_build_timeout_multiplier",
    "environment",
    "verifier",
    "agents",
    "datasets",
    "tasks",
    "artifacts",
    "extra_instruction_paths",
    "extra_instructions",
}
_ENVIRONMENT_APPLIED = {
    "override_cpus",
    "override_memory_mb",
    "override_storage_mb",
    "override_gpus",
    "env",
}
_AGENT_APPLIED = {"override_timeout_sec", "max_timeout_sec", "env"}
_VERIFIER_APPLIED = {
    "override_timeout_sec",
    "max_timeout_sec",
    "env",
    "disable",
    "import_path",
    "kwargs",
}
_DATASET_APPLIED = {"path", "task_names", "exclude_task_names", "n_tasks"}
_DATASET_IGNORED = {"overwrite", "download_dir"}
_TASK_IGNORED = {"overwrite", "download_dir", "source"}
_REPORT_WHY = {
    "agents[0].name": "the run's own agent (harness) is used",
    "agents[0].model_name": "the run's own model is used",
    "environment.type": "the run's own environment provider is used",
    "n_concurrent_trials": "ageval's own execution settings decide concurrency",
    "retry": "ageval's own retry budget applies",
}


@dataclass(frozen=True)
class LoadedJobConfig:
    """A validated job config, its raw document and where it came from."""

    config: JobConfig
    raw: dict[str, Any]
    file: str | None
    """The config file, or `None` for inline content."""


def _parse_text(text: str, source: str) -> Any:
    try:
        return json.loads(text) if source.endswith(".json") else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise HarborError(
            errors.JOB_CONFIG_INVALID, f"cannot parse the job config: {exc}", file=source
        ) from None


def _document(job_config: Path | str | dict[str, Any]) -> tuple[Any, str | None]:
    if isinstance(job_config, dict):
        return job_config, None
    if isinstance(job_config, str) and job_config.lstrip().startswith("{"):
        return _parse_text(job_config, "inline.json"), None
    path = Path(job_config)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise HarborError(
            errors.JOB_CONFIG_INVALID, f"cannot read the job config: {exc}", file=str(path)
        ) from None
    return _parse_text(text, str(path)), str(path)


def read_job_config(job_config: Path | str | dict[str, Any]) -> LoadedJobConfig:
    """Parse and validate; a coded `harbor_job_config_invalid` names the bad field."""
    raw, file = _document(job_config)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise HarborError(errors.JOB_CONFIG_INVALID, "the job config must be a mapping", file=file)
    try:
        config = JobConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise HarborError(
            errors.JOB_CONFIG_INVALID,
            f"the job config is not valid: {first['msg']}",
            file=file,
            field=".".join(str(part) for part in first["loc"]) or None,
        ) from None
    return LoadedJobConfig(config=config, raw=raw, file=file)


def _refuse(code: str, message: str, file: str | None, field: str, hint: str) -> HarborError:
    return HarborError(code, message, file=file, field=field, hint=hint)


def _dataset_source_refusal(entry: dict[str, Any]) -> tuple[str, str] | None:
    if entry.get("repo") is not None:
        return errors.GIT_SOURCE, "a dataset from a git repository"
    name = entry.get("name")
    if isinstance(name, str) and "/" in name:
        return errors.PACKAGE_SOURCE, "a dataset package"
    remote = ("name", "registry_url", "registry_path", "version", "ref")
    if any(entry.get(key) is not None for key in remote):
        return errors.REGISTRY_SOURCE, "a registry dataset"
    return None


def _task_source_refusal(entry: dict[str, Any]) -> tuple[str, str] | None:
    if entry.get("git_url") is not None or entry.get("git_commit_id") is not None:
        return errors.GIT_SOURCE, "a task from a git repository"
    if entry.get("name") is not None or entry.get("ref") is not None:
        return errors.PACKAGE_SOURCE, "a task package"
    return None


def _check_sources(loaded: LoadedJobConfig) -> None:
    hint = "download it first and give its local path"
    for section, judge in (("datasets", _dataset_source_refusal), ("tasks", _task_source_refusal)):
        for index, entry in enumerate(loaded.raw.get(section) or []):
            refusal = judge(entry) if isinstance(entry, dict) else None
            if refusal is not None:
                code, what = refusal
                field = f"{section}[{index}]"
                message = f"{what} is not supported: only local paths are"
                raise _refuse(code, message, loaded.file, field, hint)
            if isinstance(entry, dict) and not entry.get("path"):
                raise _refuse(
                    errors.JOB_CONFIG_INVALID,
                    "a local entry needs a `path`",
                    loaded.file,
                    f"{section}[{index}].path",
                    "give the directory of the dataset or task",
                )


def check_refusals(loaded: LoadedJobConfig) -> None:
    """Raise for every setting that would change what the results mean."""
    config, file = loaded.config, loaded.file
    if config.n_attempts != 1:
        raise _refuse(
            errors.N_ATTEMPTS,
            f"n_attempts is {config.n_attempts}: ageval runs one attempt per task here",
            file,
            "n_attempts",
            "remove it and use the execution parameter k instead",
        )
    if len(config.agents) > 1:
        raise _refuse(
            errors.MULTIPLE_AGENTS,
            f"the job config lists {len(config.agents)} agents: a run uses one harness",
            file,
            "agents",
            "keep one entry, or make one run per agent",
        )
    _check_sources(loaded)
    if config.install_only:
        raise _refuse(
            errors.INSTALL_ONLY,
            "install_only runs no agent and no verifier",
            file,
            "install_only",
            "remove install_only",
        )
    _check_verifier(loaded)


def _check_verifier(loaded: LoadedJobConfig) -> None:
    verifier = loaded.config.verifier
    raw_verifier = loaded.raw.get("verifier")
    kwargs = raw_verifier.get("kwargs") if isinstance(raw_verifier, dict) else None
    if verifier.import_path is not None:
        # The plugin module (and the container it drives) only when a config names a class.
        from agevalx.formats.harbor.plugin import load_verifier_class

        load_verifier_class(verifier.import_path, file=loaded.file)
        return
    if kwargs:
        raise _refuse(
            errors.JOB_CONFIG_INVALID,
            "verifier.kwargs requires verifier.import_path (as in Harbor)",
            loaded.file,
            "verifier.kwargs",
            "remove verifier.kwargs",
        )


def _report(field: str, file: str | None) -> HarborWarning:
    why = _REPORT_WHY.get(field, "ageval does not apply it")
    return HarborWarning(
        code=errors.FIELD_UNAPPLIED,
        message=f"{field} is declared but not applied: {why}",
        file=file,
        field=field,
    )


def _unapplied(section: Any, prefix: str, applied: set[str]) -> list[str]:
    if not isinstance(section, dict):
        return []
    return [f"{prefix}{key}" for key in section if key not in applied]


def unapplied_fields(loaded: LoadedJobConfig) -> list[HarborWarning]:
    """One warning per declared field that ageval does not apply."""
    raw = loaded.raw
    fields = [key for key in raw if key not in _TOP_APPLIED]
    fields += _unapplied(raw.get("environment"), "environment.", _ENVIRONMENT_APPLIED)
    fields += _unapplied(raw.get("verifier"), "verifier.", _VERIFIER_APPLIED)
    agents = raw.get("agents") or []
    if agents:
        fields += _unapplied(agents[0], "agents[0].", _AGENT_APPLIED)
    for index, entry in enumerate(raw.get("datasets") or []):
        known = _DATASET_APPLIED | _DATASET_IGNORED
        fields += _unapplied(entry, f"datasets[{index}].", known)
    for index, entry in enumerate(raw.get("tasks") or []):
        fields += _unapplied(entry, f"tasks[{index}].", {"path"} | _TASK_IGNORED)
    return [_report(field, loaded.file) for field in fields]
