"""A job's graph page: the job's request planned again, hit or miss, and why a node is stale."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agevalx.cache.store import CacheStore
from agevalx.results.models import AttemptResult, JobSummary
from agevalx.view.jobgraph import job_graph
from tests.unit.conftest import BASE_TASK_ID, DatasetFactory
from tests.unit.reports.builders import CONFIG, make_result, write_job

pytestmark = pytest.mark.unit


def a_job(root: Path) -> tuple[JobSummary, list[AttemptResult]]:
    results = [make_result(BASE_TASK_ID, attempt, agent="oracle") for attempt in range(2)]
    job_dir = write_job(root, results, k=2)
    summary = JobSummary.model_validate_json((job_dir / "summary.json").read_bytes())
    return summary, results


def test_every_node_of_the_job_is_planned_with_why_each_miss_is_stale(
    make_dataset: DatasetFactory, tmp_path: Path
) -> None:
    root = make_dataset()
    summary, results = a_job(root)

    with CacheStore(tmp_path / "empty-cache") as store:
        graph = job_graph(root, summary, results, store)

    assert graph.problem is None
    ids = [node.id for node in graph.nodes]
    assert ids[0] == f"lock:{BASE_TASK_ID}" and ids[-1] == "summary:job"
    assert f"evaluate:{BASE_TASK_ID}#1" in ids
    assert {node.status for node in graph.nodes} == {"miss"}
    run = next(node for node in graph.nodes if node.id == f"run:{BASE_TASK_ID}#0")
    assert run.explanation is not None
    assert run.explanation["reason"] == "never computed for this identity"
    assert run.job_key == next(n.key for n in results[0].nodes if n.kind == "run") != run.key
    assert run.parents == [f"image:{BASE_TASK_ID}", f"lock:{BASE_TASK_ID}"]


def test_the_jobs_agent_and_model_come_from_its_lock(
    make_dataset: DatasetFactory, tmp_path: Path
) -> None:
    root = make_dataset()
    summary, results = a_job(root)
    lock = {"config_digest": CONFIG, "overrides": {"agent": "oracle"}, "binding": {}}
    (root / ".ageval/locks").mkdir(parents=True)
    (root / f".ageval/locks/{BASE_TASK_ID}.lock.json").write_text(json.dumps(lock))

    with CacheStore(tmp_path / "empty-cache") as store:
        graph = job_graph(root, summary, results, store)

    assert graph.request == "-k 2 --agent oracle"
    assert graph.problem is None


def test_a_job_that_cannot_be_planned_shows_its_recorded_nodes_and_why(
    make_dataset: DatasetFactory, tmp_path: Path
) -> None:
    root = make_dataset()
    summary, results = a_job(root)
    (root / "ageval.yaml").unlink()

    with CacheStore(tmp_path / "empty-cache") as store:
        graph = job_graph(root, summary, results, store)

    assert graph.problem is not None and "ageval.yaml" in graph.problem
    recorded = {node.id: node.job_key for node in graph.nodes}
    assert recorded["summary:job"] == summary.summary_key
    assert recorded[f"run:{BASE_TASK_ID}#1"] == next(
        n.key for n in results[1].nodes if n.kind == "run"
    )
