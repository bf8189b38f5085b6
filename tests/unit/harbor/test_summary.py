"""A Harbor job's metrics (seed 003): score / passed, avg and pass strategies, pass@k per task."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agevalx.cache.store import CacheStore
from agevalx.errors import AgevalError
from agevalx.formats.harbor.format import verify_with_retries
from agevalx.formats.harbor.options import HarborOptions
from agevalx.formats.harbor.outcomes import VerifierOutcome, VerifierStatus
from agevalx.formats.harbor.summary import HarborSummary, attempt_score, harbor_summary
from agevalx.lockfile import BindingRequest
from agevalx.operations.planning import PlanRequest, plan
from agevalx.results.build import job_summary
from agevalx.results.metrics import task_metrics
from agevalx.results.models import AttemptResult, ErrorInfo, JobSummary
from tests.unit.harbor.builders import TaskFactory

pytestmark = pytest.mark.unit


def result(
    task: str, attempt: int, rewards: dict[str, float] | None, **extra: Any
) -> AttemptResult:
    """An attempt result as the Harbor evaluate node writes it (None: the verifier raised)."""
    if rewards is None:
        return AttemptResult(
            attempt_id=f"{task}-{attempt}",
            dataset_id="harbor/x",
            task_id=task,
            attempt=attempt,
            status="ERROR",
            config_digest="d",
            nodes=[],
        )
    passed = None
    if len(rewards) == 1 and next(iter(rewards.values())) in (0, 1):
        passed = next(iter(rewards.values())) == 1
    score = rewards.get("reward", next(iter(rewards.values())) if len(rewards) == 1 else None)
    status = {True: "PASS", False: "FAIL", None: "DONE"}[passed]
    return AttemptResult(
        attempt_id=f"{task}-{attempt}",
        dataset_id="harbor/x",
        task_id=task,
        attempt=attempt,
        status=status,  # type: ignore[arg-type]
        score=score,
        details={"passed": passed, "extra": {"eval_raw_data": {"rewards": rewards}}, **extra},
        config_digest="d",
        nodes=[],
    )


def test_the_seed_table_of_scores_and_pass_results() -> None:
    cases = [
        ({"reward": 1}, 1.0, True),
        ({"accuracy": 0}, 0.0, False),
        ({"reward": 0.5}, 0.5, None),
        ({"reward": 1, "accuracy": 0.8}, 1.0, None),
    ]
    for rewards, score, passed in cases:
        scored = attempt_score(result("t", 0, rewards))
        assert scored is not None
        assert (scored.score, scored.passed) == (score, passed)
    assert attempt_score(result("t", 0, None)) is None


def test_avg_gives_avg_at_k_of_score_and_passed_and_pass_at_k_per_task() -> None:
    results = [
        result("binary", 0, {"reward": 0}),
        result("binary", 1, {"reward": 1}),
        result("binary", 2, {"reward": 0}),
        result("fractional", 0, {"reward": 0.5}),
        result("fractional", 1, {"reward": 0.25}),
        result("fractional", 2, {"reward": 0.0}),
    ]
    summary = harbor_summary(["binary", "fractional"], results, "score", "avg")
    binary, fractional = summary.tasks["binary"], summary.tasks["fractional"]
    assert (binary.avg_score, binary.avg_passed, binary.pass_at_k) == (1 / 3, 1 / 3, True)
    assert fractional.avg_score == pytest.approx(0.25)
    assert fractional.pass_at_k is False  # the 0.0 reward is a pass result: not passed
    assert summary.primary == pytest.approx((1 / 3 + 0.25) / 2)
    # Harbor drops pass@k for the whole job once a reward is fractional; ageval decides per task.
    assert summary.harbor_pass_at_k == {}
    assert summary.pass_at_k == 0.5


def test_harbors_own_pass_at_k_is_reported_beside_ours_for_binary_rewards() -> None:
    results = [result("a", i, {"reward": v}) for i, v in enumerate((0, 1, 0, 0))]
    results += [result("b", i, {"reward": 0}) for i in range(4)]
    summary = harbor_summary(["a", "b"], results, "score", "avg")
    assert summary.harbor_pass_at_k["2"] == pytest.approx((0.5 + 0.0) / 2)
    assert summary.harbor_pass_at_k["4"] == pytest.approx(0.5)


def test_passed_as_primary_metric_is_reported_as_correct() -> None:
    results = [result("a", 0, {"reward": 1}), result("b", 0, {"reward": 0.5})]
    summary = harbor_summary(["a", "b"], results, "passed", "avg")
    assert summary.metric_name == "correct"
    assert summary.tasks["b"].primary is None  # a fractional reward has no pass result
    assert summary.primary == 1.0
    assert summary.reward == 0.75  # Harbor's reward (the Score) beside `correct`
    assert harbor_summary(["a", "b"], results, "score", "avg").reward is None


def test_an_invalid_reward_counts_as_a_failure_in_the_denominator() -> None:
    invalid = result("a", 1, {}, warning="verifier_result_invalid")
    invalid = invalid.model_copy(update={"status": "FAIL", "score": 0.0})
    invalid.details["passed"] = False
    summary = harbor_summary(["a"], [result("a", 0, {"reward": 1}), invalid], "score", "avg")
    assert summary.tasks["a"].avg_score == 0.5
    assert summary.invalid_rewards == 1
    (warning,) = summary.warnings
    assert (warning.code, warning.message) == (
        "verifier_result_invalid",
        "a#1 (a-1): the verifier left no valid reward; scored 0, not passed",
    )


def test_done_attempts_are_left_out_of_pass_rate_and_pass_at_k() -> None:
    metrics = task_metrics(["PASS", "DONE", "FAIL"], [1.0, 0.5, 0.0], [None, None, None], 2)
    assert (metrics.done, metrics.passed, metrics.failed) == (1, 1, 1)
    assert metrics.pass_rate == 0.5
    assert metrics.pass_at_k == 1.0  # 1 - C(1, 2) / C(2, 2)
    assert metrics.avg_score == 0.5


@pytest.fixture
def harbor_plan(make_task: TaskFactory, tmp_path: Path) -> Any:
    make_task("a")
    make_task("b")

    def planned(options: HarborOptions) -> Any:
        request = PlanRequest(
            dataset=tmp_path / "dataset",
            k=3,
            binding=BindingRequest(agent="oracle"),
            harbor=options,
        )
        return plan(request, CacheStore(tmp_path / "cache"))

    return planned


def test_under_the_pass_strategy_pass_at_k_is_whether_a_task_passed_within_k(
    harbor_plan: Any,
) -> None:
    planned = harbor_plan(HarborOptions(primary_metric="passed"))
    results = [result("a", 0, {"reward": 1})]
    results += [result("b", i, {"reward": 0}) for i in range(3)]
    summary = job_summary(planned, results, 3, "k")
    harbor = HarborSummary.model_validate((summary.model_extra or {})["harbor"])
    assert harbor.strategy == "pass"
    assert summary.tasks["a"].pass_at_k == 1.0 and summary.tasks["a"].n == 1
    assert summary.tasks["b"].pass_at_k == 0.0
    assert summary.overall.pass_at_k == 0.5
    assert harbor.primary == 0.5
    assert JobSummary.model_validate_json(summary.model_dump_json()).model_extra == {
        "harbor": harbor.model_dump(mode="json")
    }


def test_a_task_whose_sandbox_failed_voids_the_official_score() -> None:
    void = result("b", 0, None).model_copy(
        update={"error": ErrorInfo(code="verifier_sandbox_failed", stage="evaluate", message="x")}
    )
    summary = harbor_summary(["a", "b"], [result("a", 0, {"reward": 1}), void], "score", "avg")
    assert (summary.official, summary.void_tasks) == (False, ["b"])
    clean = harbor_summary(["a"], [result("a", 0, {"reward": 1})], "score", "avg")
    assert (clean.official, clean.void_tasks) == (True, [])


def test_a_sandbox_failure_is_retried_then_voids_the_attempt() -> None:
    fatal = VerifierOutcome(status=VerifierStatus.FATAL, message="exec failed")
    fine = VerifierOutcome(status=VerifierStatus.OK, rewards={"reward": 1.0})
    calls: list[VerifierOutcome] = [fatal, fine]
    assert verify_with_retries(lambda: calls.pop(0)) == fine
    tries: list[int] = []

    def always_fatal() -> VerifierOutcome:
        tries.append(1)
        return fatal

    with pytest.raises(AgevalError) as raised:
        verify_with_retries(always_fatal, retries=2)
    assert raised.value.code == "verifier_sandbox_failed" and len(tries) == 3
