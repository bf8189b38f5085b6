"""Scoring Harbor rewards: pure functions, no I/O.

Per attempt (one verification):

| reward                         | score | passed |
| ------------------------------ | ----- | ------ |
| `{"reward": 1}`                | 1.0   | True   |
| `{"accuracy": 0}`              | 0.0   | False  |
| `{"reward": 0.5}`              | 0.5   | None   |
| `{"reward": 1, "accuracy": 0.8}` | 1.0 | None   |
| `{"a": 0.2, "b": 0.4}`         | None  | None   |
| invalid / missing / timed out  | 0.0   | False  (+ WARNING) |

`score` is Harbor's primary reward: the `reward` key, else the only key. `passed` exists only
when the reward has exactly one key valued 0 or 1. All keys are kept in `rewards`.

Per task over k attempts: `avg` gives avg@k of `score` and of `passed` and pass@k of
`passed` (a task passes when any attempt passed); `pass` stops at the first passed attempt
and reports pass@k of `passed` only.

Where Harbor differs: Harbor 0.26 computes pass@k for the whole job and drops it entirely
as soon as one trial's reward is fractional or has several keys; here pass@k is decided per
task. Harbor 0.26 also leaves trials without a valid reward out of its mean and pass@k;
here they count as 0 / not passed (the seed's rule), so the denominator is every attempt
that verified. `harbor_pass_at_k` reproduces Harbor's job-level number for comparison.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agevalx.formats.harbor.outcomes import (
    VERIFIER_DISABLED,
    VERIFIER_RESULT_INVALID,
    VerifierOutcome,
    VerifierStatus,
)
from agevalx.formats.harbor.rewards import Rewards

PrimaryMetric = Literal["score", "passed"]
Strategy = Literal["avg", "pass"]


class AttemptScore(BaseModel):
    """The score of one verified attempt."""

    model_config = ConfigDict(frozen=True)

    score: float | None
    """Harbor's primary reward; `None` when the reward has several keys and no `reward`."""
    passed: bool | None
    """Only for a single 0/1 reward (and False for an invalid reward)."""
    rewards: Rewards = Field(default_factory=dict)
    """Every reward key (for `extra.eval_raw_data.rewards`)."""
    warning: str | None = None
    """`verifier_result_invalid` or `verifier_timeout` when scored as a failure."""


def primary_reward(rewards: Mapping[str, float]) -> float | None:
    """The `reward` key, else the single key's value, else `None`."""
    if "reward" in rewards:
        return float(rewards["reward"])
    if len(rewards) == 1:
        return float(next(iter(rewards.values())))
    return None


def passed_of(rewards: Mapping[str, float]) -> bool | None:
    """True/False for exactly one key valued 0 or 1; `None` otherwise."""
    if len(rewards) != 1:
        return None
    value = next(iter(rewards.values()))
    return bool(value == 1) if value in (0, 1) else None


def score_rewards(rewards: Mapping[str, float]) -> AttemptScore:
    """Score a valid reward (an empty one is invalid)."""
    if not rewards:
        return score_invalid(VERIFIER_RESULT_INVALID)
    return AttemptScore(
        score=primary_reward(rewards), passed=passed_of(rewards), rewards=dict(rewards)
    )


def score_invalid(code: str = VERIFIER_RESULT_INVALID) -> AttemptScore:
    """A verification without a valid reward: counted as a failure, with a warning."""
    return AttemptScore(score=0.0, passed=False, rewards={}, warning=code)


def score_outcome(outcome: VerifierOutcome) -> AttemptScore | None:
    """The attempt's score, or `None` when the attempt has no score at all.

    ok -> from the rewards; invalid or timeout -> 0 / not passed with a warning;
    disabled -> a completed attempt without score or passed; error and fatal -> `None`.
    """
    if outcome.status == VerifierStatus.OK and outcome.rewards is not None:
        return score_rewards(outcome.rewards)
    if outcome.status in (VerifierStatus.INVALID, VerifierStatus.TIMEOUT):
        return score_invalid(outcome.code or VERIFIER_RESULT_INVALID)
    if outcome.status == VerifierStatus.DISABLED:
        return AttemptScore(score=None, passed=None, warning=VERIFIER_DISABLED)
    return None


def metric_value(attempt: AttemptScore, primary_metric: PrimaryMetric) -> float | None:
    """The attempt's primary value: `score`, or `passed` as 1.0/0.0."""
    if primary_metric == "score":
        return attempt.score
    return None if attempt.passed is None else float(attempt.passed)


def stop_after(attempt: AttemptScore, strategy: Strategy) -> bool:
    """Under the `pass` strategy a task stops at its first passed attempt."""
    return strategy == "pass" and attempt.passed is True


def _mean(values: Iterable[float | None]) -> float | None:
    defined = [value for value in values if value is not None]
    return sum(defined) / len(defined) if defined else None


class TaskMetrics(BaseModel):
    """One task's metrics over its scored attempts."""

    model_config = ConfigDict(frozen=True)

    attempts: int
    avg_score: float | None
    """avg@k of `score` (`None` when no attempt has a score)."""
    avg_passed: float | None
    """avg@k of `passed` (`None` when no attempt has a pass result)."""
    pass_at_k: bool | None
    """Any attempt passed (`None` when no attempt has a pass result)."""
    primary: float | None
    """`pass` strategy: pass@k of `passed`; `avg`: avg@k of `score` (or of `passed` when
    the primary metric is `passed`, pass@k then being reported beside it)."""


def aggregate_task(
    attempts: Sequence[AttemptScore | None],
    *,
    primary_metric: PrimaryMetric = "score",
    strategy: Strategy = "avg",
) -> TaskMetrics:
    """Aggregate a task's attempts; `None` attempts (error, fatal) are left out."""
    scored = [attempt for attempt in attempts if attempt is not None]
    passes = [attempt.passed for attempt in scored if attempt.passed is not None]
    pass_at_k = any(passes) if passes else None
    avg_score = _mean(attempt.score for attempt in scored)
    avg_passed = _mean(float(value) for value in passes)
    if strategy == "pass":
        primary = None if pass_at_k is None else float(pass_at_k)
    else:
        primary = avg_passed if primary_metric == "passed" else avg_score
    return TaskMetrics(
        attempts=len(scored),
        avg_score=avg_score,
        avg_passed=avg_passed,
        pass_at_k=pass_at_k,
        primary=primary,
    )


def dataset_mean(tasks: Iterable[TaskMetrics]) -> float | None:
    """Mean of the tasks' primary values (tasks without one are left out)."""
    return _mean(task.primary for task in tasks)


# --- Harbor's own job-level pass@k, for comparison ---------------------------------------


def _pass_at_k_for_task(n: int, c: int, k: int) -> float:
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(k):
        product *= (n - c - i) / (n - i)
    return 1.0 - product


def _eligible_k(max_k: int) -> list[int]:
    values = {k for k in range(2, max_k + 1) if k & (k - 1) == 0}
    values |= set(range(5, max_k + 1, 5))
    return sorted(values)


def harbor_pass_at_k(
    trials: Iterable[tuple[str, Mapping[str, float] | None]],
) -> dict[int, float]:
    """Harbor 0.26's `_compute_pass_at_k_for_trials` over (task name, rewards) pairs.

    Trials without a valid reward are skipped; one trial whose reward is not a single 0/1
    value drops pass@k for the whole job (returns `{}`); k runs over 2, 4, 8... and
    5, 10, 15... up to the fewest trials of any task, with the unbiased estimator.
    """
    successes: defaultdict[str, list[int]] = defaultdict(list)
    for task, rewards in trials:
        if not rewards:
            continue
        if len(rewards) != 1:
            return {}
        value = next(iter(rewards.values()))
        if value not in (0, 1):
            return {}
        successes[task].append(int(value))
    if not successes:
        return {}
    fewest = min(len(values) for values in successes.values())
    return {
        k: sum(_pass_at_k_for_task(len(v), sum(v), k) for v in successes.values()) / len(successes)
        for k in _eligible_k(fewest)
    }
