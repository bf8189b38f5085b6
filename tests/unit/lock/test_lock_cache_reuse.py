"""A lock node is reused from the cache only when nothing that shapes the lock changed."""

from __future__ import annotations

import json
import os

import pytest

from agevalx import AgevalError, lock

pytestmark = pytest.mark.unit

TASK = "tasks/demo-task"


def relock(ds):
    outcomes = lock(ds)
    return outcomes[0], json.loads(outcomes[0].path.read_bytes())


def test_unchanged_dataset_reuses_its_lock(make_dataset, private_cache):
    ds = make_dataset()
    first, _ = relock(ds)

    second, _ = relock(ds)

    assert (first.reused, second.reused) == (False, True)
    assert first.lock == second.lock


def test_broken_task_yaml_after_a_lock_is_refused(make_dataset, private_cache):
    ds = make_dataset()
    relock(ds)
    (ds / TASK / "task.yaml").write_text("format: ageval.task/1\ntask_id: other\n")

    with pytest.raises(AgevalError) as caught:
        lock(ds)

    assert caught.value.code == "task_id_mismatch"


def test_edited_profiles_after_a_lock_are_revalidated(make_dataset, private_cache):
    ds = make_dataset()
    relock(ds)
    (ds / "profiles.yaml").write_text(
        "format: ageval.profiles/1\nagent_profiles: {solver: {executor: acp}}\n"
    )

    with pytest.raises(AgevalError) as caught:
        lock(ds)

    assert caught.value.code == "acp_missing_entry"


def test_new_task_file_after_a_lock_is_locked(make_dataset, private_cache):
    ds = make_dataset()
    relock(ds)
    (ds / TASK / "data").mkdir()
    (ds / TASK / "data" / "new.txt").write_text("new\n")

    outcome, document = relock(ds)

    assert not outcome.reused
    assert "data/new.txt" in document["files"]


def test_chmod_after_a_lock_is_reflected_in_the_lock(make_dataset, private_cache):
    ds = make_dataset()
    relock(ds)
    os.chmod(ds / TASK / "run.py", 0o755)

    _, document = relock(ds)

    assert document["files"]["run.py"]["executable"] is True


def test_empty_illegal_directory_added_after_a_lock_is_refused(make_dataset, private_cache):
    ds = make_dataset()
    relock(ds)
    (ds / TASK / "tests").mkdir()

    with pytest.raises(AgevalError) as caught:
        lock(ds)

    assert caught.value.code == "illegal_top_level_dir"


def test_fifo_added_after_a_lock_is_refused(make_dataset, private_cache):
    ds = make_dataset()
    relock(ds)
    os.mkfifo(ds / TASK / "pipe")

    with pytest.raises(AgevalError) as caught:
        lock(ds)

    assert caught.value.code == "unsupported_file_type"
