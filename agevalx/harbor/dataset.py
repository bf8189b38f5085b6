"""Harbor datasets in the build graph: a dataset view and a lock document per task.

A directory that has no ageval.yaml but holds Harbor tasks (or is one) is planned like any
dataset: lock, image (environment.docker_image, or environment/Dockerfile built as a cached
node), run (the agent gets instruction.md; `oracle` runs solution/solve.sh as Harbor does) and
evaluate (Harbor's verifier: tests/test.sh and reward files). Resolved env maps can hold
secrets, so the lock keeps only non-secret settings; the task is resolved again at run time.
"""

from __future__ import annotations

import inspect
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agevalx.config.dataset import DatasetConfig, Defaults, TasksSection
from agevalx.dataset.loader import Dataset
from agevalx.errors import ConfigError
from agevalx.harbor.envvars import KeepTemplates
from agevalx.harbor.errors import HarborWarning
from agevalx.harbor.jobconfig import read_job_config
from agevalx.harbor.loader import is_harbor_task, load_harbor_tasks
from agevalx.harbor.options import HarborOptions
from agevalx.harbor.plugin import load_verifier_class
from agevalx.harbor.spec import HarborJob, HarborTaskSpec, SeparateVerifierEnvironment
from agevalx.hashing import digest_file, digest_json
from agevalx.lockfile.binding import BindingRequest, bind_agent_only


class HarborSource:
    """Where a Harbor dataset's tasks come from, and their specs, resolved once per run.

    Without job-config sources a task is resolved alone (a single `--task` out of thousands
    reads one task.toml); with them the whole job is resolved once.
    """

    def __init__(self, path: Path | None, options: HarborOptions) -> None:
        self.path = path
        self.options = options
        self.job_config = read_job_config(options.job_config) if options.job_config else None
        """Read once for the dataset, not once for each task resolved alone."""
        self._specs: dict[tuple[str, bool], HarborTaskSpec] = {}
        self._lock = threading.Lock()

    def load(self, path: Path | None, templates: bool) -> HarborJob:
        """Resolve the tasks of `path` (and of the job config's `datasets`/`tasks`)."""
        return load_harbor_tasks(
            path,
            self.job_config,
            overrides=self.options.overrides(),
            environ=KeepTemplates() if templates else None,
            base_dir=self.options.base_dir,
        )

    def spec(self, task_id: str, directory: Path, templates: bool = False) -> HarborTaskSpec:
        """The resolved task; env templates from the host (or left as templates)."""
        with self._lock:
            cached = self._specs.get((task_id, templates))
            if cached is not None:
                return cached
            if self.options.has_job_sources:
                for spec in self.load(self.path, templates).tasks:
                    self._specs[(spec.name, templates)] = spec
            else:
                self._specs[(task_id, templates)] = self.load(directory, templates).tasks[0]
            return self._specs[(task_id, templates)]


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._") or "harbor"


def _listed(path: Path | None) -> tuple[Path, tuple[str, ...]] | None:
    if path is None or not path.is_dir() or (path / "ageval.yaml").exists():
        return None
    if is_harbor_task(path):
        return path.parent, (path.name,)
    task_ids = tuple(sorted(c.name for c in path.iterdir() if c.is_dir() and is_harbor_task(c)))
    return (path, task_ids) if task_ids else None


def harbor_dataset(path: Path | None, options: HarborOptions | None = None) -> Dataset | None:
    """A Dataset view of a Harbor task directory, a directory of tasks and/or a job config's
    `datasets`/`tasks`; None when `path` is neither and no options were given."""
    listed = _listed(path)
    if listed is None and options is None:
        return None
    options = options or HarborOptions()
    source = HarborSource(path, options)
    task_dirs: dict[str, Path] = {}
    if options.has_job_sources or listed is None:
        job = source.load(path, templates=True)
        task_ids = tuple(spec.name for spec in job.tasks)
        task_dirs = {spec.name: spec.dir for spec in job.tasks}
        root = listed[0] if listed else (path if path is not None else options.base_dir)
        warnings = tuple(job.warnings)
    else:
        root, task_ids = listed
        warnings = tuple(options.warnings)
    name = root.resolve().name
    if path is None and options.job_config and not options.job_config.lstrip().startswith("{"):
        name = Path(options.job_config).stem
    config = DatasetConfig(
        format="ageval.dataset/1",
        dataset_id=f"harbor/{_slug(name)}"[:128],
        version="harbor",
        tasks=TasksSection(root="."),
        defaults=Defaults(max_concurrent_tasks=1),
    )
    return Dataset(
        root=root,
        config=config,
        display=root.as_posix(),
        task_ids=task_ids,
        kind="harbor",
        task_dirs={k: v for k, v in task_dirs.items() if v != (root / k).resolve()},
        harbor=HarborSourceView(source, warnings),
    )


@dataclass(frozen=True)
class HarborSourceView:
    """What a Harbor Dataset carries: its source and the loader's warnings."""

    source: HarborSource
    warnings: tuple[HarborWarning, ...]


def _source(dataset: Dataset) -> HarborSource:
    view = dataset.harbor
    if isinstance(view, HarborSourceView):
        return view.source
    return HarborSource(None, HarborOptions())


def harbor_options(dataset: Dataset) -> HarborOptions:
    """The run-wide Harbor settings of a Harbor dataset."""
    return _source(dataset).options


def harbor_warnings(dataset: Dataset) -> list[HarborWarning]:
    """What loading the dataset reported (empty for an ageval dataset)."""
    view = dataset.harbor
    return list(view.warnings) if isinstance(view, HarborSourceView) else []


def task_spec(dataset: Dataset, task_id: str, *, templates: bool = False) -> HarborTaskSpec:
    """Resolve one task (env templates from the host environment, at the first call)."""
    spec = _source(dataset).spec(task_id, dataset.task_dir(task_id), templates)
    if spec.failure is not None:
        raise ConfigError(spec.failure.code, spec.failure.message, file=str(spec.dir / "task.toml"))
    return spec


def _names(env: Mapping[str, str]) -> dict[str, str]:
    """An env map for a key: each value's digest (values can be literal secrets)."""
    return {name: digest_json(value) for name, value in sorted(env.items())}


def _plugin(import_path: str | None, class_kwargs: dict[str, Any]) -> dict[str, Any]:
    """A verifier class in a key: its import path, kwargs and the digest of its module's
    source, so that editing an installed plugin re-runs the verifiers."""
    if import_path is None:
        return {}
    module = inspect.getsourcefile(load_verifier_class(import_path))
    return {
        "import_path": import_path,
        "class_kwargs": digest_json(class_kwargs),
        "source": digest_file(Path(module)) if module else None,
    }


def _separate(separate: SeparateVerifierEnvironment | None) -> dict[str, Any] | None:
    if separate is None:
        return None
    document = separate.model_dump(mode="json", exclude={"own": {"environment_env"}})
    if separate.own is not None:
        document["own"]["environment_env"] = _names(separate.own.environment_env)
    return document


def _settings(spec: HarborTaskSpec) -> dict[str, Any]:
    """What the run and the verifier of a task depend on beyond its files; no value of an env
    variable (the spec was resolved with templates, and values enter as digests)."""
    verifier = spec.verifier
    return {
        "run": {
            "image": spec.image,
            "workdir": spec.workdir,
            "resources": spec.resources.model_dump(mode="json"),
            "agent_timeout_sec": spec.agent_timeout_sec,
            "build_timeout_sec": spec.build_timeout_sec,
            "environment_env": _names(spec.environment_env),
            "agent_env": _names(spec.agent_env),
            "solution_env": _names(spec.solution_env),
            "instruction": digest_json(spec.instruction),
            "healthcheck": spec.healthcheck.model_dump(mode="json") if spec.healthcheck else None,
            "upload_environment_dir": spec.upload_environment_dir,
        },
        "verify": {
            "disabled": verifier.disabled,
            "timeout_sec": verifier.timeout_sec,
            "mode": str(verifier.mode),
            "separate": _separate(verifier.separate),
            "env": _names(verifier.env),
            "environment_env": _names(spec.environment_env),
            "artifacts": [artifact.model_dump(mode="json") for artifact in spec.artifacts],
            **_plugin(verifier.import_path, verifier.class_kwargs),
        },
    }


def harbor_lock(
    dataset: Dataset, task_id: str, request: BindingRequest, files: dict[str, str]
) -> dict[str, Any]:
    """The lock document of a Harbor task: what downstream keys read, and no secret."""
    spec = task_spec(dataset, task_id, templates=True)
    binding = bind_agent_only(dataset, request)
    if spec.image:
        binding["environment_options"]["image"] = spec.image
    agent_timeout = int(spec.agent_timeout_sec) if spec.agent_timeout_sec else 86400
    body: dict[str, Any] = {
        "lock_schema": "ageval.lock/1",
        "dataset": {
            "dataset_id": dataset.config.dataset_id,
            "version": "harbor",
            "tasks_root": ".",
            "max_concurrent_tasks": 1,
        },
        "task_id": task_id,
        "task": {
            "format": "harbor",
            "task_id": task_id,
            "parameters": {},
            "agent_profiles": [{"id": role} for role in binding["roles"]],
            "limits": {
                "wall_time_seconds": agent_timeout,
                "environment_seconds": int(spec.build_timeout_sec),
                "evaluate_seconds": int(spec.verifier.timeout_sec),
                "agent_concurrency": 1,
            },
            "artifacts": {"publishable": []},
            "evaluation": {"tmpfs_mb": 32, "environments": {}, "collect": []},
        },
        "features": {
            "harbor": True,
            "run_py": False,
            "evaluator_py": False,
            "dockerfile": spec.image is None,
            "setup_sh": False,
            "compose": False,
            "solution": (spec.dir / "solution").is_dir(),
        },
        "files": files,
        "binding": binding,
        "harbor": {
            "workdir": spec.workdir,
            "verifier_disabled": spec.verifier.disabled,
            "verifier_mode": str(spec.verifier.mode),
            "healthcheck": spec.healthcheck is not None,
            **_settings(spec),
        },
        "overrides": {k: v for k, v in (("agent", request.agent), ("model", request.model)) if v},
    }
    return {**body, "config_digest": digest_json(body)}
