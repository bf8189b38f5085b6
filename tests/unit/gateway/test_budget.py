"""The job budget: spend counted against --max-cost / --max-tokens."""

from __future__ import annotations

import threading

import pytest

from agevalx.gateway.budget import JobBudget

pytestmark = pytest.mark.unit


def test_no_limit_is_never_reached() -> None:
    budget = JobBudget()
    budget.add(10_000, 5_000, 3.0)
    assert budget.reached is None
    assert budget.figures()["tokens"] == 15_000


def test_the_cost_limit_is_reached_at_its_value() -> None:
    budget = JobBudget(max_cost=0.01)
    budget.add(100, 10, 0.006)
    assert budget.reached is None
    budget.add(100, 10, 0.004)
    assert budget.reached == "job_cost"
    assert "of --max-cost $0.01" in budget.describe()


def test_the_token_limit_counts_prompt_and_completion() -> None:
    budget = JobBudget(max_tokens=1000)
    budget.add(600, 399, None)
    assert budget.reached is None
    budget.add(0, 1, None)
    assert budget.reached == "job_tokens"
    assert budget.unknown_cost == 2
    assert budget.describe().startswith("1,000 tokens of --max-tokens 1,000")


def test_unknown_costs_make_the_cost_a_lower_bound() -> None:
    budget = JobBudget(max_cost=1.0)
    budget.add(10, 10, None)
    assert "at least" in budget.describe()


def test_reused_attempts_count_toward_the_limit() -> None:
    budget = JobBudget(max_cost=0.5)
    budget.add_usage({"requests": 3, "prompt_tokens": 30, "completion_tokens": 9, "cost_usd": 0.5})
    budget.add_usage(
        {"requests": 1, "prompt_tokens": 1, "completion_tokens": 1, "cost_usd": "unknown"}
    )
    assert budget.reached == "job_cost"
    assert budget.tokens == 41 and budget.requests == 4 and budget.unknown_cost == 1


def test_concurrent_additions_are_all_counted() -> None:
    budget = JobBudget()

    def add() -> None:
        for _ in range(1000):
            budget.add(1, 1, 0.001)

    threads = [threading.Thread(target=add) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert budget.tokens == 16_000 and budget.requests == 8000
    assert budget.cost == pytest.approx(8.0)
