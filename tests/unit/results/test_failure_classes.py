"""result.json and summary.json carry failure classes; infrastructure ERRORs are not scored."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agevalx.cache.store import CacheStore
from agevalx.errors import AgevalError
from agevalx.graph.plan import Plan
from agevalx.operations.planning import PlanRequest, plan
from agevalx.results.build import attempt_result, job_summary
from agevalx.results.metrics import overall_metrics, task_metrics
from agevalx.results.models import AttemptResult, ErrorInfo, JobRun, JobSummary, TryRecord
from tests.unit.graph.conftest import write_dataset

pytestmark = pytest.mark.unit


@dataclass
class Job:
    plan: Plan
    store: CacheStore

    def result(self, attempt: int, error: AgevalError | None, **extra: Any) -> AttemptResult:
        """Attempt `attempt` of task alpha: nothing cached, `error` from its run node."""
        errors = {f"run:alpha#{attempt}": error} if error else {}
        return attempt_result(self.plan, self.store, "alpha", attempt, {}, {}, errors, **extra)


@pytest.fixture
def job(tmp_path: Path) -> Job:
    store = CacheStore(tmp_path / "cache")
    return Job(plan(PlanRequest(dataset=write_dataset(tmp_path / "ds"), k=3), store), store)


def test_error_info_takes_its_class_from_the_catalogue_and_writes_it_as_class() -> None:
    error = ErrorInfo(code="docker_unavailable", stage="environment", message="down")
    assert error.failure_class == "infrastructure"
    document = json.loads(error.model_dump_json())
    assert document["class"] == "infrastructure" and "failure_class" not in document
    assert ErrorInfo.model_validate(document) == error
    crashed = ErrorInfo(code="agent_crashed", stage="run", message="exit 1")
    assert crashed.model_dump(mode="json")["class"] == "agent"
    assert ErrorInfo(code="from_the_future", stage="run", message="m").failure_class == "agent"


def test_a_result_json_written_before_the_catalogue_still_loads_with_its_class() -> None:
    old = {"code": "image_build_failed", "stage": "environment", "message": "m", "hint": None}
    assert ErrorInfo.model_validate(old).failure_class == "task"
    with pytest.raises(ValueError):
        ErrorInfo.model_validate({**old, "class": "nobody"})


def test_attempt_result_classifies_every_error(job: Job) -> None:
    crashed = job.result(0, AgevalError("agent_crashed", "exit 1"))
    lost = job.result(1, AgevalError("environment_lost", "gone"))
    assert crashed.error is not None and crashed.error.failure_class == "agent"
    assert lost.error is not None and lost.error.failure_class == "infrastructure"
    assert lost.failure_class == "infrastructure"
    never = job.result(2, None)
    assert never.error is not None and (never.error.code, never.failure_class) == (
        "not_computed",
        "infrastructure",
    )


def test_retried_tries_are_numbered_in_stage_order_and_left_out_when_none(job: Job) -> None:
    tries = {
        "evaluate:alpha#0": [AgevalError("scoring_environment_lost", "scorer gone")],
        "run:alpha#0": [
            AgevalError("environment_lost", "killed"),
            AgevalError("model_stream_broken", "stalled"),
        ],
        "run:alpha#1": [AgevalError("engine_unavailable", "not this attempt's")],
        "image:alpha": [AgevalError("engine_unavailable", "the task's, shared")],
    }
    result = job.result(0, None, tries=tries)
    assert [(t.number, t.stage, t.code, t.failure_class) for t in result.tries] == [
        (1, "run", "environment_lost", "infrastructure"),
        (2, "run", "model_stream_broken", "infrastructure"),
        (3, "evaluate", "scoring_environment_lost", "infrastructure"),
    ]
    document = json.loads(result.model_dump_json())
    assert document["tries"][0] == {
        "number": 1,
        "stage": "run",
        "code": "environment_lost",
        "class": "infrastructure",
        "message": "killed",
    }
    assert AttemptResult.model_validate(document) == result
    assert "tries" not in json.loads(job.result(0, None).model_dump_json())
    assert TryRecord.model_validate(document["tries"][2]).stage == "evaluate"


def test_infrastructure_errors_are_left_out_of_pass_at_k_unless_counted() -> None:
    statuses = ["PASS", "FAIL", "ERROR", "ERROR"]
    classes = [None, None, "infrastructure", "agent"]
    left_out = task_metrics(statuses, [None] * 4, [None] * 4, 2, classes)
    assert (left_out.n, left_out.errors, left_out.infrastructure) == (3, 2, 1)
    assert left_out.pass_rate == pytest.approx(1 / 3)
    assert left_out.pass_at_k == pytest.approx(1 - 1 / 3)  # 1 - C(2,2)/C(3,2)
    assert left_out.pass_hat_k == 0.0
    counted = task_metrics(statuses, [None] * 4, [None] * 4, 2, classes, count_infra_as_fail=True)
    assert (counted.n, counted.errors, counted.infrastructure) == (4, 2, 1)
    assert counted.pass_rate == 0.25
    assert counted.pass_at_k == 0.5  # 1 - C(3,2)/C(4,2)
    unclassified = task_metrics(statuses, [None] * 4, [None] * 4, 2)
    assert unclassified == counted.model_copy(update={"infrastructure": 0})


def test_a_task_whose_attempts_all_failed_on_infrastructure_has_no_score() -> None:
    metrics = task_metrics(
        ["ERROR", "ERROR"], [None, None], [None, None], 1, ["infrastructure"] * 2
    )
    assert (metrics.n, metrics.pass_rate, metrics.pass_at_k) == (0, None, None)
    overall = overall_metrics([metrics, task_metrics(["PASS"], [1.0], [None], 1)])
    assert (overall.infrastructure, overall.errors, overall.n) == (2, 2, 1)
    assert overall.pass_at_k == 1.0  # the scoreless task is left out of the mean


def test_job_summary_counts_infrastructure_and_leaves_it_out_of_scores(job: Job) -> None:
    results = [
        job.result(0, AgevalError("environment_lost", "gone")),
        job.result(1, AgevalError("agent_crashed", "exit 1")),
        job.result(2, AgevalError("agent_crashed", "exit 1")),
    ]
    summary = job_summary(job.plan, results, 2, "key")
    alpha = summary.tasks["alpha"]
    assert (alpha.n, alpha.errors, alpha.infrastructure, alpha.pass_at_k) == (2, 3, 1, 0.0)
    assert summary.overall.infrastructure == 1
    counted = job_summary(job.plan, results, 2, "key", count_infra_as_fail=True)
    assert (counted.tasks["alpha"].n, counted.tasks["alpha"].infrastructure) == (3, 1)


def test_summary_json_has_the_run_figures_only_when_set(job: Job) -> None:
    summary = job_summary(job.plan, [job.result(0, None)], 1, "key")
    assert "run" not in json.loads(summary.model_dump_json())
    run = JobRun(
        retries=3,
        retried_codes={"environment_lost": 2, "model_stream_broken": 1},
        not_run=4,
        stopped_by_limit=1,
        limit="job_cost",
        spend={"cost_usd": 1.5, "tokens": 1200, "max_cost": 1.0, "reached": "job_cost"},
        gateway=[{"origin": "http://127.0.0.1:1", "model": "m", "peak": 8, "throttled": 2}],
    )
    with_run = summary.model_copy(update={"run": run})
    document = json.loads(with_run.model_dump_json())
    assert document["run"]["retried_codes"] == {"environment_lost": 2, "model_stream_broken": 1}
    assert JobSummary.model_validate(document).run == run
    with pytest.raises(ValueError):
        JobRun.model_validate({"retries": 1, "unknown": 2})
