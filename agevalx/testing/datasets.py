"""Test and benchmark datasets made of an existing dataset's tasks, under ids of the caller's
choosing."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

import yaml


def job_of_tasks(
    source: Path, target: Path, tasks: Mapping[str, str], *, salt: str | None = None
) -> Path:
    """`source`'s ageval.yaml and profiles.yaml with `tasks` (id: task of `source`) at `target`.

    Keys are made of content, not of task ids, and a job computes each key once: a task under
    another id than its source gets a file of its own (copy.txt), so its attempts are its own.
    `salt` goes into each task's parameters: its attempts and images are then the caller's
    alone."""
    target.mkdir(parents=True)
    for name in ("ageval.yaml", "profiles.yaml"):
        shutil.copy(source / name, target / name)
    for task, origin in tasks.items():
        shutil.copytree(source / "tasks" / origin, target / "tasks" / task)
        spec = target / "tasks" / task / "task.yaml"
        spec.write_text(spec.read_text().replace(f"task_id: {origin}", f"task_id: {task}"))
        if salt is not None:
            document = yaml.safe_load(spec.read_text())
            document.setdefault("parameters", {})["salt"] = salt
            spec.write_text(yaml.safe_dump(document))
        if task != origin:
            (target / "tasks" / task / "copy.txt").write_text(f"{task}\n")
    return target
