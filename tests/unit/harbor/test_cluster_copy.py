"""A Harbor dataset as a cluster worker gets it: pickled (Ray serialises a node's task),
re-rooted at the worker's checkout, and its tasks resolved there, not at the driver's paths."""

from __future__ import annotations

import copy
import pickle
import shutil
from pathlib import Path

import pytest

from agevalx.errors import UsageError
from agevalx.formats.harbor.format import HarborDataset, open_harbor
from agevalx.formats.harbor.options import HarborOptions
from agevalx.lockfile import BindingRequest
from agevalx.operations.run import _check_clusterable
from tests.unit.harbor.builders import TaskFactory

pytestmark = pytest.mark.unit

ORACLE = BindingRequest(agent="oracle")


def test_a_pickled_harbor_dataset_resolves_its_tasks_under_the_root_it_is_moved_to(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    make_task("one")
    make_task("two")
    dataset = open_harbor(tmp_path / "dataset", None, ORACLE)
    assert isinstance(dataset, HarborDataset)
    assert dataset.task_spec("one").dir == (tmp_path / "dataset" / "one").resolve()
    assert dataset.tasks_outside_root() == ()

    worker = copy.copy(pickle.loads(pickle.dumps(dataset)))
    checkout = tmp_path / "checkout"
    shutil.copytree(tmp_path / "dataset", checkout)
    shutil.rmtree(tmp_path / "dataset")  # as on another machine: the driver's paths are gone
    worker.root = checkout
    assert worker.task_spec("one").dir.resolve() == (checkout / "one").resolve()
    assert worker.task_spec("two").name == "two"


def test_tasks_of_a_job_config_are_outside_the_root_a_worker_gets(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    make_task("one")
    make_task("far", root=tmp_path / "elsewhere")
    job = tmp_path / "job.yaml"
    job.write_text(f"tasks:\n  - path: {tmp_path / 'elsewhere' / 'far'}\n")
    dataset = open_harbor(tmp_path / "dataset", HarborOptions.build(job_config=str(job)), ORACLE)
    assert isinstance(dataset, HarborDataset)
    assert "far" in dataset.tasks_outside_root()
    with pytest.raises(UsageError) as refused:  # before anything is sent to the cluster
        _check_clusterable(dataset)
    assert refused.value.code == "cluster_tasks_outside_dataset"
    assert "far" in refused.value.message
