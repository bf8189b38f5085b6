"""The example datasets shipped in examples/datasets lock as they are."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agevalx import BindingRequest, lock

pytestmark = pytest.mark.unit

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "datasets"


def copy_example(name: str, tmp_path: Path) -> Path:
    """A private copy, so locking never rewrites the checked-in lock views."""
    target = tmp_path / name
    shutil.copytree(EXAMPLES / name, target, ignore=shutil.ignore_patterns(".ageval"))
    return target


def read_lock(outcome) -> dict:
    return json.loads(outcome.path.read_bytes())


def test_minimal_demo_locks_its_task(tmp_path, cache_dir):
    ds = copy_example("minimal-demo", tmp_path)

    outcomes = lock(ds)

    assert [outcome.lock.task_id for outcome in outcomes] == ["terminal-jsonl-agg"]
    document = read_lock(outcomes[0])
    assert document["dataset"]["dataset_id"] == "ageval/minimal-demo"
    assert document["binding"]["roles"]["solver"]["label"] == "scripted"
    assert outcomes[0].path == ds / ".ageval" / "locks" / "terminal-jsonl-agg.lock.json"


def test_text_tools_locks_both_tasks(tmp_path, cache_dir):
    ds = copy_example("text-tools", tmp_path)

    outcomes = lock(ds)

    assert [outcome.lock.task_id for outcome in outcomes] == ["fix-csv-report", "word-frequency"]
    fix = read_lock(outcomes[0])
    assert sorted(fix["binding"]["roles"]) == ["reviewer", "writer"]
    assert fix["features"]["setup_sh"] is True


def test_text_tools_locks_one_task_on_request(tmp_path, cache_dir):
    ds = copy_example("text-tools", tmp_path)

    outcomes = lock(ds, tasks=["word-frequency"])

    assert [outcome.lock.task_id for outcome in outcomes] == ["word-frequency"]
    assert read_lock(outcomes[0])["task"]["parameters"]["memory_mb"] == 512


def test_minimal_demo_locks_with_the_oracle_agent(tmp_path, cache_dir):
    ds = copy_example("minimal-demo", tmp_path)

    outcomes = lock(ds, request=BindingRequest(agent="oracle"))

    document = read_lock(outcomes[0])
    assert document["binding"]["roles"]["solver"]["executor"] == "oracle"
    assert document["overrides"] == {"agent": "oracle"}


@pytest.mark.parametrize("name", ["minimal-demo", "text-tools"])
def test_examples_lock_the_same_from_a_fresh_copy(tmp_path, cache_dir, name):
    first = [o.path.read_bytes() for o in lock(copy_example(name, tmp_path / "a"))]
    second = [o.path.read_bytes() for o in lock(copy_example(name, tmp_path / "b"))]

    assert first == second
