"""Resolving one ageval task into its lock: validated config, defaults, binding and file digests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agevalx.errors import ConfigError
from agevalx.formats.ageval.loader import PROMPT_FILE, TaskSource
from agevalx.formats.files import FileDigester, task_files
from agevalx.lockfile.binding import bind
from agevalx.lockfile.models import LockedBinding, LockedDataset, LockedFeatures, TaskLock
from agevalx.lockfile.request import BindingRequest

if TYPE_CHECKING:
    from agevalx.formats.base import Dataset

UNLOCKED_PARAMETERS = {"main_environment", "cap_add"}


def _features(task: TaskSource) -> LockedFeatures:
    return LockedFeatures(
        run_py=task.has("run.py"),
        evaluator_py=task.has("evaluator.py"),
        dockerfile=task.has("environment/Dockerfile"),
        setup_sh=task.has("environment/setup.sh"),
        compose=task.has("environment/compose.yaml") or task.has("environment/docker-compose.yaml"),
        solution=(task.directory / "solution").is_dir(),
    )


def _check_runnable(task: TaskSource, features: LockedFeatures, binding: LockedBinding) -> None:
    task_file = f"{task.display}/task.yaml"
    if not features.evaluator_py:
        raise ConfigError(
            "missing_evaluator",
            "the task has no evaluator.py; PASS and FAIL come only from the evaluator",
            file=f"{task.display}/evaluator.py",
            hint="add evaluator.py with def evaluate(ctx) returning {'status': 'PASS'|'FAIL'}",
        )
    if not features.dockerfile and "image" not in binding.environment_options:
        raise ConfigError(
            "missing_dockerfile",
            "environment: docker needs environment/Dockerfile (or environment_options.image)",
            file=f"{task.display}/environment/Dockerfile",
            hint="add environment/Dockerfile, or set environment_options.image in profiles.yaml",
        )
    if task.config.evaluation.environments and not binding.evaluate_host["isolated"]:
        raise ConfigError(
            "evaluation_environments_need_isolated_host",
            "evaluation.environments needs evaluate_host.isolated: true and environment: docker",
            file=task_file,
            field="evaluation.environments",
            hint="set evaluate_host: {isolated: true} in profiles.yaml, or remove the block",
        )
    if features.run_py:
        return
    judge = task.config.evaluation.judge  # the evaluator's role, not an agent the run starts
    agents = {name: role for name, role in binding.roles.items() if name != judge}
    executors = {role.executor for role in agents.values()}
    if len(agents) != 1:
        raise ConfigError(
            "default_run_needs_one_profile",
            f"without run.py a task runs its single agent profile; it has {len(agents)}",
            file=task_file,
            field="agent_profiles",
            hint="declare exactly one agent profile, or add run.py to orchestrate several",
        )
    if executors != {"oracle"} and not task.has(PROMPT_FILE):
        raise ConfigError(
            "missing_prompt",
            f"without run.py the agent is given {PROMPT_FILE}, which does not exist",
            file=f"{task.display}/{PROMPT_FILE}",
            hint=f"write the task's instructions to {PROMPT_FILE}",
        )
    if executors == {"oracle"} and not features.solution:
        raise ConfigError(
            "missing_solution",
            "the oracle agent runs solution/, which does not exist",
            file=f"{task.display}/solution",
            hint="add solution/solve.sh, or bind another agent",
        )


def _locked_task(task: TaskSource) -> dict[str, Any]:
    data = task.config.model_dump(mode="json", exclude_none=True)
    data["parameters"] = {
        key: value for key, value in data["parameters"].items() if key not in UNLOCKED_PARAMETERS
    }
    return data


def resolve_task_lock(
    dataset: Dataset,
    task: TaskSource,
    request: BindingRequest,
    digester: FileDigester | None = None,
) -> TaskLock:
    """Build the lock of one task for one binding request."""
    binding = bind(task, dataset, request)
    features = _features(task)
    _check_runnable(task, features, binding)
    files = task_files(task.directory, task.display, *([digester] if digester else []))
    overrides = {
        key: value
        for key, value in (
            ("agent", request.agent),
            ("model", request.model),
            ("fork_model", request.fork_model),
        )
        if value is not None
    }
    return TaskLock.signed(
        dataset=LockedDataset(
            dataset_id=dataset.dataset_id,
            version=dataset.version,
            tasks_root=dataset.tasks_root,
            max_concurrent_tasks=dataset.max_concurrent_tasks,
        ),
        task_id=task.task_id,
        task=_locked_task(task),
        features=features,
        files=files,
        binding=binding,
        overrides=overrides,
    )
