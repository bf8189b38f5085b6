"""Harbor datasets as ageval datasets: where their tasks come from, and each task's lock.

A directory that has no ageval.yaml but holds Harbor tasks (or is one), and/or a job config
that lists `datasets`/`tasks`, is a `HarborDataset` (agevalx/formats/harbor/format.py). Resolved env
maps can hold secrets, so the lock keeps only non-secret settings (values as digests,
templates as written); the task is resolved again, with the host environment, at run time.
"""

from __future__ import annotations

import inspect
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agevalx.config.task import Limits
from agevalx.formats.files import FileDigester, task_files
from agevalx.formats.harbor.envvars import KeepTemplates
from agevalx.formats.harbor.errors import HarborWarning
from agevalx.formats.harbor.jobconfig import read_job_config
from agevalx.formats.harbor.loader import is_harbor_task, load_harbor_tasks
from agevalx.formats.harbor.options import HarborOptions
from agevalx.formats.harbor.plugin import load_verifier_class
from agevalx.formats.harbor.spec import HarborJob, HarborTaskSpec, SeparateVerifierEnvironment
from agevalx.formats.harbor.taskdir import children_tasks, declares_task, skipped_warning
from agevalx.hashing import digest_file, digest_json
from agevalx.lockfile.models import (
    HarborLock,
    LockedBinding,
    LockedDataset,
    LockedFeatures,
    LockedRoleRef,
    LockedTask,
    ScoringImage,
    TaskLock,
)

if TYPE_CHECKING:
    from agevalx.formats.base import Dataset


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
        self._task_warnings: dict[str, list[HarborWarning]] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        """What a copy on another machine (a cluster worker) gets: the options and the job
        config, not the lock nor the specs resolved here, whose paths are this machine's;
        the copy resolves its tasks again under its own root."""
        state = dict(self.__dict__)
        del state["_lock"]
        state["_specs"], state["_task_warnings"] = {}, {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
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
                job = self.load(directory, templates)
                self._specs[(task_id, templates)] = job.tasks[0]
                self._task_warnings[task_id] = [w for w in job.warnings if w.file]
            return self._specs[(task_id, templates)]

    def task_warnings(self) -> list[HarborWarning]:
        """What resolving the tasks one by one reported about their task.toml (a job
        config's whole load reports it at once)."""
        with self._lock:
            return [w for task in sorted(self._task_warnings) for w in self._task_warnings[task]]


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._") or "harbor"


@dataclass(frozen=True)
class ListedTasks:
    """The tasks of a Harbor task directory or directory of tasks, found without loading."""

    root: Path
    task_ids: tuple[str, ...]
    warnings: list[HarborWarning]
    """Children with a task.toml that are not tasks: skipped, as Harbor skips them."""


def declares_tasks(path: Path | None) -> bool:
    """`path` or one of its children holds a task.toml: it is meant as Harbor tasks, so the
    Harbor loader explains what is wrong with it (never a missing ageval.yaml)."""
    if path is None or not path.is_dir():
        return False
    return declares_task(path) or any(c.is_dir() and declares_task(c) for c in path.iterdir())


def listed_tasks(path: Path | None, disable_verification: bool = False) -> ListedTasks | None:
    """The tasks of a Harbor task directory or a directory of tasks; None when there are none
    (the loader then says why)."""
    if path is None or not path.is_dir() or (path / "ageval.yaml").exists():
        return None
    if is_harbor_task(path, disable_verification=disable_verification):
        return ListedTasks(path.parent, (path.name,), [])
    if declares_task(path):
        return None
    tasks, skipped = children_tasks(path, disable_verification=disable_verification)
    if not tasks:
        return None
    warnings = [skipped_warning(problem) for problem in skipped]
    return ListedTasks(path, tuple(task.name for task in tasks), warnings)


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
    document["build_context"] = (
        None if separate.build_context is None else separate.build_context.name
    )
    if separate.own is not None:
        document["own"]["environment_env"] = _names(separate.own.environment_env)
    return document


def _settings(spec: HarborTaskSpec, dataset_name: str | None) -> dict[str, Any]:
    """What the run and the verifier of a task depend on beyond its files; no value of an env
    variable (the spec was resolved with templates, and values enter as digests)."""
    verifier = spec.verifier
    return {
        "run": {
            "dataset_name": dataset_name,
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


def _scoring_image(spec: HarborTaskSpec, task_dir: Path) -> ScoringImage | None:
    """The separate verifier environment's image: named, or built from a context in the task
    (tests/ with its Dockerfile, else the task's environment/)."""
    separate = spec.verifier.separate
    if separate is None:
        return None
    if separate.image is not None:
        return ScoringImage(name="verifier", image=separate.image)
    if separate.build_context is None:
        return None
    context = separate.build_context.resolve().relative_to(task_dir.resolve()).as_posix()
    return ScoringImage(name="verifier", context=context)


def _overrides(agent: str | None, model: str | None) -> dict[str, str]:
    return {key: value for key, value in (("agent", agent), ("model", model)) if value}


def harbor_lock(
    dataset: Dataset,
    spec: HarborTaskSpec,
    binding: LockedBinding,
    digester: FileDigester,
    dataset_name: str | None = None,
) -> TaskLock:
    """The lock of a Harbor task: what downstream keys read, and no secret. `spec` is the
    task resolved with its env templates kept; `dataset_name` (`--dataset-name`) enters the
    run's section, so results are reused only under the same name."""
    task_id = spec.name
    task_dir = dataset.task_dir(task_id)
    options = {**binding.environment_options}
    if spec.image:
        options["image"] = spec.image
    agent_timeout = int(spec.agent_timeout_sec) if spec.agent_timeout_sec else 86400
    return TaskLock.signed(
        dataset=LockedDataset(
            dataset_id=dataset.dataset_id,
            version=dataset.version,
            tasks_root=".",
            max_concurrent_tasks=dataset.max_concurrent_tasks,
        ),
        task_id=task_id,
        task=LockedTask(
            format="harbor",
            task_id=task_id,
            agent_profiles=[LockedRoleRef(id=role) for role in binding.roles],
            limits=Limits(
                wall_time_seconds=max(1, agent_timeout),
                environment_seconds=max(1, int(spec.build_timeout_sec)),
                evaluate_seconds=max(1, int(spec.verifier.timeout_sec)),
            ),
        ),
        features=LockedFeatures(
            run_py=False,
            evaluator_py=False,
            dockerfile=spec.image is None,
            setup_sh=False,
            compose=False,
            solution=(spec.dir / "solution").is_dir(),
        ),
        files=task_files(task_dir, spec.dir.as_posix(), digester),
        binding=binding.model_copy(update={"environment_options": options}),
        scoring_image=_scoring_image(spec, task_dir),
        harbor=HarborLock(
            workdir=spec.workdir,
            verifier_disabled=spec.verifier.disabled,
            verifier_mode=str(spec.verifier.mode),
            healthcheck=spec.healthcheck is not None,
            **_settings(spec, dataset_name),
        ),
        overrides={
            k: v
            for k, v in (("agent", dataset.binding.agent), ("model", dataset.binding.model))
            if v
        },
    )
