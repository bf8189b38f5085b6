"""Scoring tables and reward parsing, against hand-computed values."""

from __future__ import annotations

import pytest

from agevalx.formats.harbor.outcomes import VerifierOutcome, VerifierStatus
from agevalx.formats.harbor.rewards import InvalidReward, parse_reward_json, parse_reward_text
from agevalx.formats.harbor.scoring import (
    AttemptScore,
    aggregate_task,
    dataset_mean,
    harbor_pass_at_k,
    metric_value,
    score_invalid,
    score_outcome,
    score_rewards,
    stop_after,
)

pytestmark = pytest.mark.unit

Trial = tuple[str, dict[str, float] | None]


# --- the seed's tables ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rewards", "score", "passed"),
    [
        ({"reward": 1}, 1.0, True),
        ({"reward": 0}, 0.0, False),
        ({"accuracy": 0}, 0.0, False),
        ({"accuracy": 0.8}, 0.8, None),
        ({"reward": 0.5}, 0.5, None),
        ({"reward": 1, "accuracy": 0.8}, 1.0, None),
        ({"a": 0.2, "b": 0.4}, None, None),
        ({"reward": 1.0}, 1.0, True),
        ({"reward": 2}, 2.0, None),
        ({"reward": -1}, -1.0, None),
    ],
)
def test_score_and_passed_table(
    rewards: dict[str, float], score: float | None, passed: bool | None
) -> None:
    attempt = score_rewards(rewards)
    assert (attempt.score, attempt.passed) == (score, passed)
    assert attempt.rewards == rewards and attempt.warning is None


def test_invalid_reward_scores_zero_not_passed_with_a_warning() -> None:
    assert score_invalid() == AttemptScore(
        score=0.0, passed=False, rewards={}, warning="verifier_result_invalid"
    )
    assert score_rewards({}).warning == "verifier_result_invalid"


def _outcome(status: VerifierStatus, **fields: object) -> VerifierOutcome:
    return VerifierOutcome.model_validate({"status": status, **fields})


def test_score_outcome_per_status() -> None:
    ok = score_outcome(_outcome(VerifierStatus.OK, rewards={"reward": 1}))
    assert ok is not None and (ok.score, ok.passed) == (1.0, True)
    invalid = score_outcome(_outcome(VerifierStatus.INVALID, code="verifier_result_invalid"))
    assert invalid == score_invalid("verifier_result_invalid")
    timeout = score_outcome(_outcome(VerifierStatus.TIMEOUT, code="verifier_timeout"))
    assert timeout is not None and timeout.score == 0.0 and timeout.warning == "verifier_timeout"
    disabled = score_outcome(_outcome(VerifierStatus.DISABLED))
    assert disabled is not None and (disabled.score, disabled.passed) == (None, None)
    assert score_outcome(_outcome(VerifierStatus.ERROR)) is None
    assert score_outcome(_outcome(VerifierStatus.FATAL)) is None
    assert _outcome(VerifierStatus.FATAL).severity == "fatal"
    assert _outcome(VerifierStatus.INVALID).severity == "warning"


def test_metric_value_and_pass_strategy_stop() -> None:
    attempt = score_rewards({"reward": 1})
    assert metric_value(attempt, "score") == 1.0 and metric_value(attempt, "passed") == 1.0
    fractional = score_rewards({"reward": 0.5})
    assert metric_value(fractional, "passed") is None
    assert stop_after(attempt, "pass") and not stop_after(attempt, "avg")
    assert not stop_after(score_rewards({"reward": 0}), "pass")


# --- per-task aggregation (k attempts) -----------------------------------------------------


def test_avg_strategy_over_three_attempts() -> None:
    attempts = [score_rewards({"reward": r}) for r in (0, 1, 0)]
    metrics = aggregate_task(attempts)
    assert metrics.attempts == 3
    assert metrics.avg_score == pytest.approx(1 / 3)
    assert metrics.avg_passed == pytest.approx(1 / 3)
    assert metrics.pass_at_k is True
    assert metrics.primary == pytest.approx(1 / 3)


def test_primary_passed_with_avg_is_avg_of_passed() -> None:
    attempts = [score_rewards({"reward": r}) for r in (1, 1, 0, 0)]
    metrics = aggregate_task(attempts, primary_metric="passed")
    assert metrics.primary == 0.5 and metrics.pass_at_k is True


def test_pass_strategy_primary_is_pass_at_k() -> None:
    metrics = aggregate_task([score_rewards({"reward": 0}), score_invalid()], strategy="pass")
    assert metrics.pass_at_k is False and metrics.primary == 0.0
    metrics = aggregate_task(
        [score_rewards({"reward": 0}), score_rewards({"reward": 1})], strategy="pass"
    )
    assert metrics.primary == 1.0


def test_fractional_task_has_no_pass_result() -> None:
    metrics = aggregate_task([score_rewards({"reward": 0.5}), score_rewards({"reward": 0.25})])
    assert metrics.avg_score == 0.375
    assert (metrics.avg_passed, metrics.pass_at_k) == (None, None)
    assert aggregate_task([score_rewards({"reward": 0.5})], primary_metric="passed").primary is None


def test_invalid_attempts_count_and_error_attempts_do_not() -> None:
    attempts = [score_rewards({"reward": 1}), score_invalid(), None]
    metrics = aggregate_task(attempts)
    assert metrics.attempts == 2
    assert metrics.avg_score == 0.5 and metrics.avg_passed == 0.5


def test_multi_key_task_has_no_score() -> None:
    metrics = aggregate_task([score_rewards({"a": 0.5, "b": 1})])
    assert (metrics.avg_score, metrics.primary) == (None, None)


def test_dataset_mean_skips_tasks_without_primary() -> None:
    tasks = [
        aggregate_task([score_rewards({"reward": 1})]),
        aggregate_task([score_rewards({"reward": 0})]),
        aggregate_task([score_rewards({"a": 1, "b": 0})]),
    ]
    assert dataset_mean(tasks) == 0.5
    assert dataset_mean([]) is None


# --- Harbor's own job-level pass@k (the documented difference) ----------------------------


def test_harbor_pass_at_k_unbiased_estimator() -> None:
    # task a: 4 trials, 1 pass; task b: 4 trials, 0 passes.
    pass_: Trial = ("a", {"reward": 1})
    fail_a: Trial = ("a", {"reward": 0})
    fail_b: Trial = ("b", {"reward": 0})
    trials = [pass_, fail_a, fail_a, fail_a, fail_b, fail_b, fail_b, fail_b]
    result = harbor_pass_at_k(trials)
    # pass@2 for a = 1 - C(3,2)/C(4,2) = 1 - 3/6 = 0.5; b = 0 -> mean 0.25
    # pass@4 for a = 1 (n - c = 3 < 4); b = 0 -> mean 0.5
    assert result == {2: pytest.approx(0.25), 4: pytest.approx(0.5)}


def test_harbor_drops_pass_at_k_for_the_whole_job_on_one_fraction() -> None:
    trials: list[tuple[str, dict[str, float]]] = [
        ("a", {"reward": 1}),
        ("a", {"reward": 0}),
        ("b", {"reward": 0.5}),
        ("b", {"reward": 0}),
    ]
    assert harbor_pass_at_k(trials) == {}
    # ... while ageval decides per attempt and task: a passes; b's binary attempt failed.
    assert aggregate_task([score_rewards(r) for _, r in trials[:2]]).pass_at_k is True
    assert aggregate_task([score_rewards(r) for _, r in trials[2:]]).pass_at_k is False
    assert aggregate_task([score_rewards(r) for _, r in trials[2:3]]).pass_at_k is None


def test_harbor_skips_invalid_trials_and_k_values() -> None:
    passed: Trial = ("a", {"reward": 1})
    invalid: Trial = ("a", None)
    trials = [passed] * 10 + [invalid]
    assert sorted(harbor_pass_at_k(trials)) == [2, 4, 5, 8, 10]
    assert harbor_pass_at_k([("a", {"reward": 1})]) == {}
    assert harbor_pass_at_k([("a", {"x": 1, "y": 0})] * 2) == {}


# --- reward files ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "rewards"),
    [
        (b"1", {"reward": 1.0}),
        (b" 0.5\n", {"reward": 0.5}),
        (b"1e-3", {"reward": 0.001}),
        (b"-2", {"reward": -2.0}),
    ],
)
def test_reward_txt(data: bytes, rewards: dict[str, float]) -> None:
    assert parse_reward_text(data) == rewards


@pytest.mark.parametrize(
    "data", [b"", b"pass", b"nan", b"inf", b"1 2", b"\xff\xfe", b"1" + b"0" * 400]
)
def test_invalid_reward_txt(data: bytes) -> None:
    with pytest.raises(InvalidReward):
        parse_reward_text(data)


def test_reward_json_keeps_every_key_and_type() -> None:
    rewards = parse_reward_json(b'{"reward": 1, "accuracy": 0.75, "ok": true}')
    assert rewards == {"reward": 1, "accuracy": 0.75, "ok": 1.0}
    assert isinstance(rewards["reward"], int) and isinstance(rewards["ok"], float)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b'{"reward": 1',
        b'{"reward": NaN}',
        b'{"reward": Infinity}',
        b'{"reward": 1e309}',
        b'{"reward": 1' + b"0" * 400 + b"}",
        b'{"reward": 1, "accuracy": -1' + b"0" * 400 + b"}",
        b'{"reward": "1"}',
        b'{"reward": null}',
        b'{"reward": [1]}',
        b"1",
        b"[1]",
    ],
)
def test_invalid_reward_json(data: bytes) -> None:
    with pytest.raises(InvalidReward):
        parse_reward_json(data)


def test_empty_reward_json_object_is_invalid_when_scored() -> None:
    assert parse_reward_json(b"{}") == {}
    assert score_rewards({}).warning == "verifier_result_invalid"
