"""A small fixed dataset for graph tests, written fresh for each test."""

from __future__ import annotations

from pathlib import Path

import pytest

from agevalx.cache.store import CacheStore

FILES = {
    "ageval.yaml": "format: ageval.dataset/1\ndataset_id: test/graph\nversion: '1'\n",
    "profiles.yaml": (
        "format: ageval.profiles/1\n"
        "agent_profiles:\n"
        "  solver:\n"
        "    executor: acp\n"
        "    model: {id: gpt-5.4-mini}\n"
        "    options: {entry: agent}\n"
    ),
    "tasks/alpha/task.yaml": (
        "format: ageval.task/1\ntask_id: alpha\nagent_profiles: [{id: solver}]\n"
        "limits: {evaluate_seconds: 60}\n"
    ),
    "tasks/alpha/run.py": "def run(ctx):\n    ctx.invoke('solver', ctx.prompt('task.md'))\n",
    "tasks/alpha/evaluator.py": "def evaluate(ctx):\n    return {'status': 'PASS'}\n",
    "tasks/alpha/environment/Dockerfile": "FROM ageval/base:bookworm\n",
    "tasks/alpha/prompts/task.md": "Do the thing.\n",
    "tasks/alpha/data/input.txt": "1 2 3\n",
    "tasks/beta/task.yaml": (
        "format: ageval.task/1\ntask_id: beta\nagent_profiles: [{id: solver}]\n"
    ),
    "tasks/beta/evaluator.py": "def evaluate(ctx):\n    return {'status': 'FAIL'}\n",
    "tasks/beta/environment/Dockerfile": "FROM ageval/base:bookworm\n",
    "tasks/beta/prompts/task.md": "Do the other thing.\n",
}


def write_dataset(root: Path) -> Path:
    for relative, text in FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    return write_dataset(tmp_path / "ds")


@pytest.fixture
def store(tmp_path: Path) -> CacheStore:
    return CacheStore(tmp_path / "cache")
