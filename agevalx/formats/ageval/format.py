"""The ageval task format: ageval.yaml, task.yaml, run.py, evaluator.py (seeds 000 and 002).

The agent works in /attempt/workspace, its HOME is /attempt/home. The environment stage
starts the task's compose services, copies data/ into the workspace and runs
environment/setup.sh; the run stage runs run.py (or one invocation of the single role with
prompts/task.md); evaluator.py scores.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agevalx.config.dataset import DatasetConfig
from agevalx.config.loading import read_yaml_mapping
from agevalx.config.secrets import resolve_reference
from agevalx.formats.ageval.loader import (
    PROMPT_FILE,
    DatasetFiles,
    TaskSource,
    read_dataset,
    read_task,
)
from agevalx.formats.base import Dataset, RunBody, TaskRuntime, Verifier
from agevalx.formats.files import FileDigester
from agevalx.fsutil import make_dirs
from agevalx.lockfile.request import BindingRequest

if TYPE_CHECKING:
    from agevalx.agents.base import OracleLayout
    from agevalx.environments.attempt import AttemptEnvironment
    from agevalx.environments.container import AttemptContainer, ContainerSpec
    from agevalx.environments.standby import Network
    from agevalx.lockfile.models import TaskLock

DATASET_FILE = "ageval.yaml"


@dataclass
class AgevalDataset(Dataset):
    """A directory with ageval.yaml and tasks/<task_id>/task.yaml."""

    format_name = "ageval"
    files: DatasetFiles | None = None

    @property
    def config(self) -> DatasetConfig:
        assert self.files is not None
        return self.files.config

    def load_task(self, task_id: str) -> TaskSource:
        self.check_task(task_id)
        assert self.files is not None
        return read_task(self.files, task_id)

    def lock_task(self, task_id: str, digester: FileDigester) -> TaskLock:
        from agevalx.formats.ageval.lock import resolve_task_lock  # binding: only when locking

        return resolve_task_lock(self, self.load_task(task_id), self.binding, digester)

    def runtime(self, lock: TaskLock) -> TaskRuntime:
        return AgevalRuntime(self, lock)


def is_ageval_dataset(path: Path) -> bool:
    return (path / DATASET_FILE).exists()


def open_ageval(path: Path, binding: BindingRequest) -> AgevalDataset:
    """Read and validate an ageval dataset root (its tasks are read when they are locked)."""
    files = read_dataset(path)
    config = files.config
    return AgevalDataset(
        root=path,
        display=files.display,
        dataset_id=config.dataset_id,
        version=config.version,
        task_ids=files.task_ids,
        max_concurrent_tasks=config.defaults.max_concurrent_tasks,
        binding=binding,
        tasks_root=config.tasks.root,
        files=files,
    )


def unlocked_settings(
    task_dir: Path, profiles: Path | None
) -> tuple[tuple[str, ...], dict[str, str]]:
    """cap_add and main_environment: read at run time, never locked (they may hold secrets;
    a `${VAR}` value is read from the host environment now)."""
    document = read_yaml_mapping(task_dir / "task.yaml", display="task.yaml")
    parameters = document.get("parameters") or {}
    cap_add = tuple(parameters.get("cap_add") or ())
    environment = dict(parameters.get("main_environment") or {})
    if profiles is not None and profiles.is_file():
        options = read_yaml_mapping(profiles, display="profiles.yaml").get("environment_options")
        if isinstance(options, dict):
            cap_add += tuple(options.get("cap_add") or ())
            environment = {**dict(options.get("main_environment") or {}), **environment}
    return cap_add, {str(k): resolve_reference(str(v)) for k, v in environment.items()}


def _load_run_py(task_dir: Path) -> RunBody:
    spec = importlib.util.spec_from_file_location(f"ageval_run_{id(task_dir)}", task_dir / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    body: RunBody = module.run
    return body


def _default_run(ctx: Any, role: str) -> None:
    """The task's one agent role (not the evaluator's judge) given prompts/task.md."""
    prompt_file = ctx.task_file(PROMPT_FILE)
    ctx.invoke(role, prompt_file.read_text(encoding="utf-8") if prompt_file.is_file() else "")


class AgevalRuntime(TaskRuntime):
    """An ageval task's hooks."""

    def container_spec(self, base: ContainerSpec) -> ContainerSpec:
        from agevalx.environments.container import WORKSPACE

        parameters = self.lock.task.parameters
        options = self.lock.binding.environment_options
        cap_add, environment = unlocked_settings(self.task_dir, self.dataset.profiles_path())
        data = self.task_dir / "data"
        return dataclasses.replace(
            base,
            network_mode=parameters.get("network_mode") or options.get("network_mode"),
            cpus=parameters.get("cpus"),
            memory_mb=parameters.get("memory_mb"),
            gpus=parameters.get("gpus"),
            cap_add=cap_add,
            environment=tuple(environment.items()),
            # data/ into the workspace as the container starts (in its first copy)
            seed=((str(data), f"{WORKSPACE}/data"),) if data.is_dir() else (),
        )

    def compose_file(self) -> Path | None:
        from agevalx.environments.compose import compose_file

        return compose_file(self.task_dir)

    def secret_values(self) -> list[str]:
        """Also main_environment's values (never locked, never recorded)."""
        _, environment = unlocked_settings(self.task_dir, self.dataset.profiles_path())
        return [*super().secret_values(), *environment.values()]

    def prepare(self, environment: AttemptEnvironment, workdir: str, deadline: float) -> None:
        """environment/setup.sh (data/ is in the workspace already: `container_spec`)."""
        from agevalx.environments.attempt import remaining
        from agevalx.environments.container import PRIVATE
        from agevalx.environments.engine import EnvironmentFailure

        container = environment.container
        setup = self.task_dir / "environment" / "setup.sh"
        if not setup.is_file():
            return
        container.put_files(PRIVATE, {"setup.sh": (setup.read_bytes(), 0o755)})
        result = container.exec(
            f"sh {PRIVATE}/setup.sh", timeout=remaining(deadline, "before setup.sh")
        )
        if result.timed_out or time.monotonic() > deadline:
            raise EnvironmentFailure(
                "environment_timeout", "environment/setup.sh outlived environment_seconds"
            )
        if result.exit_code != 0:
            raise EnvironmentFailure(
                "setup_failed",
                f"environment/setup.sh exited with {result.exit_code}",
                hint=result.output.strip()[-500:] or None,
            )

    def workdir(self, image: str) -> str:
        from agevalx.environments.container import WORKSPACE

        return WORKSPACE

    def run_py(self) -> Path | None:
        return self.task_dir / "run.py" if self.lock.features.run_py else None

    def run_body(self) -> RunBody:
        if self.lock.features.run_py:
            return _load_run_py(self.task_dir)
        judge = self.lock.task.evaluation.judge
        (role,) = [role for role in self.lock.binding.roles if role != judge]
        return lambda ctx: _default_run(ctx, role)

    def oracle(self, container: AttemptContainer, workdir: str) -> OracleLayout:
        from agevalx.agents.base import OracleLayout

        return OracleLayout(target=self.oracle_seed())

    def oracle_seed(self) -> str:
        """`<attempt>/.ageval/solution`, beside the workspace."""
        from agevalx.environments.container import PRIVATE

        return f"{PRIVATE}/solution"

    def collect_artifacts(self, container: AttemptContainer, workdir: str, into: Path) -> None:
        """Each `artifacts.publishable` entry, at its path relative to the workspace."""
        for item in self.lock.task.artifacts.publishable:
            source = f"{workdir.rstrip('/')}/{item.path}"
            target = into / item.path
            if container.copy_file(source, target, root=into):  # streamed to disk, whole
                continue
            if container.exec(f"test -d {shlex.quote(source)}", workdir="/").exit_code == 0:
                make_dirs(target.parent, into)
                container.get_directory(source, target)

    def verifier(self) -> Verifier:
        from agevalx.formats.ageval.verifier import EvaluatorPy

        return EvaluatorPy()

    def scoring_network(self) -> Network | None:
        from agevalx.evaluation.networks import standby_network

        return standby_network(self.lock)
