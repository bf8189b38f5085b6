"""`ageval run` lints the planned tasks first: a task with an error-level finding refuses the
job; a task that passed is not checked again until one of its files changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from agevalx.cache.store import CacheStore
from agevalx.errors import ConfigError
from agevalx.lockfile import BindingRequest
from agevalx.operations.lintgate import LINT_KIND, gate_key, lint_before_run
from agevalx.operations.planning import PlanRequest, plan
from tests.unit.graph.conftest import write_dataset

pytestmark = pytest.mark.unit

SECRET = "export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789\n"


def checked(dataset: Path, store: CacheStore, tasks: tuple[str, ...] = ()) -> list[str]:
    return lint_before_run(plan(PlanRequest(dataset=dataset, tasks=tasks), store), store, dataset)


def test_a_clean_task_is_checked_once_and_again_only_when_its_files_change(
    tmp_path: Path,
) -> None:
    dataset, store = write_dataset(tmp_path / "ds"), CacheStore(tmp_path / "cache")
    assert checked(dataset, store) == ["alpha", "beta"]
    assert checked(dataset, store) == []  # both passed with these files: cached
    (dataset / "tasks/beta/prompts/task.md").write_text("Do it differently.\n")
    assert checked(dataset, store) == ["beta"]
    lock = plan(PlanRequest(dataset=dataset, tasks=("alpha",)), store).node("lock:alpha")
    entry = store.get_action(LINT_KIND, gate_key(lock.key))
    assert entry is not None and entry.meta["task_id"] == "alpha"


def test_an_error_refuses_the_job_names_the_file_and_is_never_cached(tmp_path: Path) -> None:
    dataset, store = write_dataset(tmp_path / "ds"), CacheStore(tmp_path / "cache")
    (dataset / "tasks/alpha/environment/setup.sh").write_text(SECRET)
    for _ in range(2):  # refused each time, not remembered as checked
        with pytest.raises(ConfigError) as caught:
            checked(dataset, store)
        error = caught.value
        assert error.code == "lint_errors"
        assert "tasks/alpha/environment/setup.sh:1: literal_secret" in error.message
        assert error.file == "tasks/alpha/environment/setup.sh"
        assert error.hint is not None and "--no-lint" in error.hint
        assert "sk-proj" not in error.message + error.hint  # the finding never repeats it
    # a job of the other task alone is not refused for alpha's file
    assert checked(dataset, store, ("beta",)) == ["beta"]
    (dataset / "tasks/alpha/environment/setup.sh").write_text("export OPENAI_API_KEY\n")
    assert checked(dataset, store) == ["alpha"]


def test_a_missing_instruction_stops_an_agent_but_not_the_oracle(tmp_path: Path) -> None:
    dataset, store = write_dataset(tmp_path / "ds"), CacheStore(tmp_path / "cache")
    (dataset / "tasks/alpha/run.py").unlink()
    (dataset / "tasks/alpha/prompts/task.md").write_text("\n")  # there, but empty
    with pytest.raises(ConfigError) as caught:
        checked(dataset, store, ("alpha",))
    assert "instruction_missing" in caught.value.message
    (dataset / "tasks/alpha/solution").mkdir()
    (dataset / "tasks/alpha/solution/solve.sh").write_text("true\n")
    oracle = PlanRequest(dataset=dataset, tasks=("alpha",), binding=BindingRequest(agent="oracle"))
    assert lint_before_run(plan(oracle, store), store, dataset) == ["alpha"]
