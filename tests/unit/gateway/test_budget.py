"""The job budget: spend counted against --max-cost / --max-tokens."""

from __future__ import annotations

import threading

import pytest

from agevalx.errors import AgevalError
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


def test_the_gateway_counts_live_spend_and_refuses_requests_past_the_limit() -> None:
    from agevalx.agents.mockllm import MockLLM
    from agevalx.gateway.attempt import AttemptRoutes
    from agevalx.gateway.server import Gateway
    from tests.unit.gateway.test_gateway import _chat

    budget = JobBudget(max_tokens=1)
    script = [{"message": "one two three"}, {"message": "four"}]
    with Gateway() as gateway, MockLLM(script, model="gpt-5.4-mini") as mock:
        profile = {"base_url": mock.url, "model": {"id": "gpt-5.4-mini"}}
        routes = AttemptRoutes(gateway, {"solver": profile}, budget=budget)
        token = routes.routes["solver"].token
        status, _ = _chat(gateway, token, {"model": "gpt-5.4-mini"})
        assert status == 200
        assert budget.requests == 1 and budget.tokens > 1
        assert budget.reached == "job_tokens"
        status, data = _chat(gateway, token, {"model": "gpt-5.4-mini"})
        assert status == 403 and b"job_limit_reached" in data
        assert len(mock.completions) == 1  # the refused request never reached the upstream
        with pytest.raises(AgevalError) as raised:
            routes.check("solver")
        assert raised.value.code == "job_limit_reached"
        routes.close()
