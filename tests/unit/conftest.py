"""Shared fixtures of the unit tests: a builder of small, valid datasets on disk.

`make_dataset(...)` writes a dataset that locks as it is; a test passes only what differs
from that baseline. Mapping overrides are merged into the baseline YAML documents (use
`make_dataset.DELETE` to drop a key), a string replaces a whole file with raw text, and
`task_files` adds, replaces or (with `None`) leaves out a file of every task.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from agevalx import BindingRequest, lock
from agevalx.errors import AgevalError, ConfigError

DELETE = object()
"""Merge marker: remove this key from the baseline document."""

NO_FILE = object()
"""Pass as `root_yaml`, `profiles` or a task's document to leave that file out."""

BASE_TASK_ID = "demo-task"

BASE_ROOT: dict[str, Any] = {
    "format": "ageval.dataset/1",
    "dataset_id": "acme/demo",
    "version": "1",
}

BASE_TASK: dict[str, Any] = {
    "format": "ageval.task/1",
    "agent_profiles": [{"id": "solver"}],
}

BASE_PROFILES: dict[str, Any] = {
    "format": "ageval.profiles/1",
    "environment": "docker",
    "agent_profiles": {
        "solver": {"executor": "acp", "options": {"entry": "pi"}},
    },
}

BASE_TASK_FILES: dict[str, str] = {
    "run.py": "def run(ctx):\n    ctx.agent('solver').prompt('go')\n",
    "evaluator.py": "def evaluate(ctx):\n    return {'status': 'PASS'}\n",
    "environment/Dockerfile": "FROM debian:bookworm-slim\n",
    "prompts/task.md": "Do the task.\n",
}


def merge(base: Any, override: Any) -> Any:
    """Deep-merge `override` into a copy of `base`; `DELETE` removes a key."""
    if isinstance(base, Mapping) and isinstance(override, Mapping):
        merged = dict(copy.deepcopy(base))
        for key, value in override.items():
            if value is DELETE:
                merged.pop(key, None)
            elif key in merged:
                merged[key] = merge(merged[key], value)
            else:
                merged[key] = copy.deepcopy(value)
        return merged
    return copy.deepcopy(override)


def _write(path: Path, content: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")


def _document(base: dict[str, Any], override: Any) -> str | bytes | None:
    if override is NO_FILE:
        return None
    if isinstance(override, str | bytes):
        return override
    return yaml.safe_dump(merge(base, override or {}), sort_keys=False, allow_unicode=True)


class DatasetFactory:
    """Build a valid dataset under tmp_path, changed only by the arguments given.

    - `root_yaml`: overrides merged into ageval.yaml (or raw text, or NO_FILE).
    - `task`: overrides merged into the task.yaml of the single baseline task `demo-task`.
    - `tasks`: {task_id: overrides} to build several tasks instead (task_id is filled in).
    - `profiles`: overrides merged into profiles.yaml (or raw text, or NO_FILE).
    - `files`: {path relative to the dataset root: text | bytes}, written last.
    - `task_files`: {path relative to each task directory: text | bytes | None (left out)}.

    The markers are reachable from the fixture: `make_dataset.DELETE`, `make_dataset.NO_FILE`.
    """

    DELETE = DELETE
    NO_FILE = NO_FILE

    def __init__(self, tmp_path: Path) -> None:
        self._base = tmp_path
        self._counter = itertools.count()

    def __call__(
        self,
        root_yaml: Any = None,
        *,
        task: Any = None,
        tasks: Mapping[str, Any] | None = None,
        profiles: Any = None,
        files: Mapping[str, str | bytes] | None = None,
        task_files: Mapping[str, str | bytes | None] | None = None,
    ) -> Path:
        root = self._base / f"ds{next(self._counter)}"
        root.mkdir(parents=True)
        text = _document(BASE_ROOT, root_yaml)
        if text is not None:
            _write(root / "ageval.yaml", text)
        text = _document(BASE_PROFILES, profiles)
        if text is not None:
            _write(root / "profiles.yaml", text)
        chosen = dict(tasks) if tasks is not None else {BASE_TASK_ID: task}
        for task_id, override in chosen.items():
            directory = root / "tasks" / task_id
            directory.mkdir(parents=True)
            text = _document({**BASE_TASK, "task_id": task_id}, override)
            if text is not None:
                _write(directory / "task.yaml", text)
            for relative, content in {**BASE_TASK_FILES, **(task_files or {})}.items():
                if content is not None:
                    _write(directory / relative, content)
        for relative, content in (files or {}).items():
            _write(root / relative, content)
        return root


@pytest.fixture(scope="session")
def shared_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for the whole session: creating a cache layout costs more than a lock."""
    return tmp_path_factory.mktemp("ageval-cache")


@pytest.fixture
def cache_dir(shared_cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point `$AGEVAL_CACHE_DIR` at the session's cache, never at the user's.

    A lock that hits the cache is not validated again, so a test whose input differs from
    an earlier one only in what the cache key leaves out uses `private_cache` instead.
    """
    monkeypatch.setenv("AGEVAL_CACHE_DIR", str(shared_cache_dir))
    return shared_cache_dir


@pytest.fixture
def private_cache(cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache of this test alone, for tests whose outcome a cache hit could change."""
    path = tmp_path / "private-cache"
    monkeypatch.setenv("AGEVAL_CACHE_DIR", str(path))
    return path


@pytest.fixture
def make_dataset(tmp_path: Path, cache_dir: Path) -> DatasetFactory:
    """The dataset builder (see `DatasetFactory`); locks go to the session's cache."""
    return DatasetFactory(tmp_path)


def _request(
    agent: str | None = None, model: str | None = None, profiles: Path | None = None
) -> BindingRequest:
    return BindingRequest(agent=agent, model=model, profiles=profiles)


@pytest.fixture
def lock_fails(cache_dir: Path) -> Callable[..., AgevalError]:
    """`lock_fails(ds, tasks=..., agent=..., model=..., profiles=..., kind=ConfigError)`.

    Lock must fail with an error of exactly `kind`; returns it so the test can check its
    `code`, `file` and `field`.
    """

    def fails(
        dataset: Path,
        *,
        tasks: list[str] | None = None,
        kind: type[AgevalError] = ConfigError,
        **binding: Any,
    ) -> AgevalError:
        with pytest.raises(AgevalError) as caught:
            lock(dataset, tasks=tasks, request=_request(**binding))
        assert type(caught.value) is kind, caught.value
        return caught.value

    return fails


@pytest.fixture
def lock_document(cache_dir: Path) -> Callable[..., dict[str, Any]]:
    """`lock_document(ds, task_id=..., agent=..., model=..., profiles=...)`.

    Lock one task and return its written lock file, parsed.
    """

    def read(dataset: Path, *, task_id: str = BASE_TASK_ID, **binding: Any) -> dict[str, Any]:
        outcomes = lock(dataset, tasks=[task_id], request=_request(**binding))
        assert [outcome.lock.task_id for outcome in outcomes] == [task_id]
        document: dict[str, Any] = json.loads(outcomes[0].path.read_bytes())
        return document

    return read


@pytest.fixture(autouse=True)
def _pinned_release(monkeypatch: pytest.MonkeyPatch) -> None:
    """Golden keys hold the ageval release; pin it so that a release bump keeps them."""
    from agevalx.graph import keys

    monkeypatch.setattr(keys, "AGEVAL_VERSION", "0.1.0")
