"""Harbor datasets in the build graph: a dataset view and a lock document per task.

A directory that has no ageval.yaml but holds Harbor tasks (or is one) is planned like any
dataset: lock, image (environment.docker_image, or environment/Dockerfile built as a cached
node), run (the agent gets instruction.md; `oracle` runs solution/solve.sh as Harbor does) and
evaluate (Harbor's verifier: tests/test.sh and reward files). Resolved env maps can hold
secrets, so the lock keeps only non-secret settings; the task is resolved again at run time.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agevalx.config.dataset import DatasetConfig, Defaults, TasksSection
from agevalx.dataset.loader import Dataset
from agevalx.errors import ConfigError
from agevalx.harbor.loader import is_harbor_task, load_harbor_tasks
from agevalx.harbor.spec import HarborTaskSpec
from agevalx.hashing import digest_json
from agevalx.lockfile.binding import BindingRequest, bind_agent_only


def harbor_dataset(path: Path) -> Dataset | None:
    """A Dataset view of a Harbor task directory or directory of tasks; None if neither."""
    if not path.is_dir() or (path / "ageval.yaml").exists():
        return None
    task_ids: tuple[str, ...]
    if is_harbor_task(path):
        root, task_ids = path.parent, (path.name,)
    else:
        task_ids = tuple(sorted(c.name for c in path.iterdir() if c.is_dir() and is_harbor_task(c)))
        root = path
    if not task_ids:
        return None
    slug = re.sub(r"[^a-z0-9._-]+", "-", root.resolve().name.lower()).strip("-._") or "harbor"
    config = DatasetConfig(
        format="ageval.dataset/1",
        dataset_id=f"harbor/{slug}"[:128],
        version="harbor",
        tasks=TasksSection(root="."),
        defaults=Defaults(max_concurrent_tasks=1),
    )
    return Dataset(
        root=root, config=config, display=root.as_posix(), task_ids=task_ids, kind="harbor"
    )


def task_spec(dataset: Dataset, task_id: str) -> HarborTaskSpec:
    """Resolve one task (env templates from the host environment, at the time of the call)."""
    job = load_harbor_tasks(dataset.tasks_dir / task_id)
    spec = job.tasks[0]
    if spec.failure is not None:
        raise ConfigError(spec.failure.code, spec.failure.message, file=str(spec.dir / "task.toml"))
    return spec


def harbor_lock(
    dataset: Dataset, task_id: str, request: BindingRequest, files: dict[str, str]
) -> dict[str, Any]:
    """The lock document of a Harbor task: what downstream keys read, and no secret."""
    spec = task_spec(dataset, task_id)
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
        },
        "overrides": {k: v for k, v in (("agent", request.agent), ("model", request.model)) if v},
    }
    return {**body, "config_digest": digest_json(body)}
