"""One check of an evaluation's LLM judges, shared by evaluator.py and Harbor verifiers."""

from __future__ import annotations

import pytest

from agevalx.evaluation.result import EvaluationResult
from agevalx.gateway.attempt import AttemptRoutes, judged
from agevalx.gateway.routes import UNAVAILABLE, Route, Upstream
from agevalx.gateway.usage import Usage

pytestmark = pytest.mark.unit

VERDICT = EvaluationResult(
    status="FAIL", score=0.0, details={"judge": "unreachable"}, evaluator_output="out", seconds=2.0
)


def routes_of(*roles: str) -> AttemptRoutes:
    routes = AttemptRoutes.none()
    for role in roles:
        routes.routes[role] = Route(token=f"t-{role}", upstream=Upstream("http://model/v1"))
    return routes


def test_a_result_without_judges_is_unchanged() -> None:
    assert judged(VERDICT, None) is VERDICT
    assert judged(VERDICT, AttemptRoutes.none()) == VERDICT


def test_the_judges_usage_is_the_results() -> None:
    routes = routes_of("judge")
    routes.routes["judge"].stats.add(Usage(prompt_tokens=3, completion_tokens=2), None)
    result = judged(VERDICT, routes)
    assert (result.status, result.details) == ("FAIL", VERDICT.details)
    assert result.usage["judge"].requests == 1 and result.usage["judge"].prompt_tokens == 3


@pytest.mark.parametrize("timed_out", [False, True])
def test_a_failed_judge_upstream_is_an_error_that_keeps_what_the_verifier_said(
    timed_out: bool,
) -> None:
    routes = routes_of("judge", "other")
    stats = routes.routes["other"].stats
    if timed_out:  # still held waiting for the upstream when the verifier ran out of time
        stats.waiting, stats.failure_message = 1, "502 from upstream"
    else:
        stats.failure, stats.failure_message = UNAVAILABLE, "502 from upstream"
    result = judged(VERDICT, routes, timed_out=timed_out)
    assert result.status == "ERROR" and result.error is not None
    assert result.error.type == UNAVAILABLE and "502 from upstream" in result.error.message
    assert (result.details, result.evaluator_output, result.seconds) == (
        VERDICT.details,
        "out",
        2.0,
    )
    assert set(result.usage) == {"judge", "other"}


def test_a_request_still_waiting_is_no_failure_while_there_is_time() -> None:
    routes = routes_of("judge")
    routes.routes["judge"].stats.waiting = 1
    assert judged(VERDICT, routes).status == "FAIL"
