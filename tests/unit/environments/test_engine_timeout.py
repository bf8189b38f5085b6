"""An engine that does not answer within the client's timeout: `engine_unavailable`, named by
its call, and a job that stops starting what needs the engine (`operations.job.EngineWatch`)."""

from __future__ import annotations

from typing import Any, cast

import pytest
import requests

from agevalx.environments.engine import (
    DEFAULT_TIMEOUT,
    TIMEOUT_ENV,
    EngineUnresponsive,
    _answering,
    engine_timeout,
)
from agevalx.errors import AgevalError, UsageError
from agevalx.failures import ENGINE_UNAVAILABLE
from agevalx.gateway.budget import JobBudget
from agevalx.graph.nodes import Node
from agevalx.operations.job import EngineWatch, admission, retry_policy

pytestmark = pytest.mark.unit


def node(kind: str, name: str = "alpha") -> Node:
    return Node(id=f"{kind}:{name}", kind=kind, key="k" * 32, inputs={}, parents={}, status="miss")


def stuck(message: str = "the Docker engine did not answer `POST /x/start` within 4 s") -> Any:
    return EngineUnresponsive(ENGINE_UNAVAILABLE, message, hint="restart it")


def test_the_timeout_is_300_s_unless_the_variable_sets_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    assert engine_timeout() == DEFAULT_TIMEOUT == 300
    monkeypatch.setenv(TIMEOUT_ENV, " 2.5 ")
    assert engine_timeout() == 2.5


@pytest.mark.parametrize("raw", ["0", "-3", "soon", "inf", "nan"])
def test_a_timeout_that_is_not_seconds_above_0_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv(TIMEOUT_ENV, raw)
    with pytest.raises(UsageError) as raised:
        engine_timeout()
    assert (raised.value.code, raised.value.field) == ("invalid_engine_timeout", TIMEOUT_ENV)


class FakeApi:
    """The SDK's session, as far as `_answering` uses it: `send`, which times out."""

    def __init__(self, error: Exception | None) -> None:
        self.error = error

    def send(self, request: Any, **kwargs: Any) -> str:
        if self.error is not None:
            raise self.error
        return "answer"


def test_a_call_the_engine_does_not_answer_in_time_is_engine_unavailable_naming_it() -> None:
    api = FakeApi(requests.exceptions.ReadTimeout("read timed out"))
    _answering(api, 4.0)
    request = requests.Request("POST", "http+docker://localhost/v1.41/containers/abc/start?x=1")
    with pytest.raises(EngineUnresponsive) as raised:
        api.send(request.prepare(), timeout=4.0)
    error = raised.value
    assert error.code == ENGINE_UNAVAILABLE
    assert error.message == (
        "the Docker engine did not answer `POST /v1.41/containers/abc/start` within 4 s"
    )
    assert "docs/docker-setup.md" in (error.hint or "")
    # Code that bore the client's timeout (an OSError) bears this one the same way.
    assert isinstance(error, OSError)
    assert isinstance(error.__cause__, requests.exceptions.ReadTimeout)


def test_answers_and_other_failures_pass_through_unchanged() -> None:
    api = FakeApi(None)
    _answering(api, 4.0)
    request = requests.Request("GET", "http+docker://localhost/v1.41/_ping").prepare()
    assert api.send(request) == "answer"
    refused = FakeApi(requests.exceptions.ConnectionError("refused"))
    _answering(refused, 4.0)
    with pytest.raises(requests.exceptions.ConnectionError):
        refused.send(request)


def test_after_the_engine_stopped_answering_only_nodes_off_the_engine_start() -> None:
    watch = EngineWatch()
    assert watch.holds(node("run")) is None
    assert watch.saw(AgevalError("environment_lost", "gone")) is False
    assert watch.holds(node("run")) is None

    assert watch.saw(stuck()) is True
    for kind in ("image", "run", "evaluate", "replay", "scoring_host", "scoring_image"):
        held = watch.holds(node(kind))
        assert held is not None and held.code == ENGINE_UNAVAILABLE, kind
        assert held.message.startswith("not started: the Docker engine stopped answering (")
        assert held.hint == "restart it"
    for kind in ("lock", "summary", "leaderboard"):
        assert watch.holds(node(kind)) is None, kind


def test_the_first_failure_is_kept_and_one_made_from_it_counts() -> None:
    watch = EngineWatch()
    try:
        try:
            raise stuck("first")
        except EngineUnresponsive:
            raise AgevalError("copy_failed", "copying into the container failed") from None
    except AgevalError as reported:
        assert watch.saw(reported) is True  # its context is the engine's failure
    assert watch.saw(stuck("second")) is True
    assert watch.stopped is not None and watch.stopped.message == "first"


def test_a_node_that_found_the_engine_stuck_is_not_retried_and_holds_the_next() -> None:
    watch = EngineWatch()
    retry = retry_policy(2, watch=watch)
    admit = admission(JobBudget(), watch)
    assert retry(node("run"), AgevalError("environment_lost", "gone"), 1) is True
    assert admit(node("run", "beta")) is None
    assert retry(node("run"), stuck(), 1) is False
    held = admit(node("run", "beta"))
    assert held is not None and held.code == ENGINE_UNAVAILABLE
    assert admit(node("summary")) is None
    # Without a watch (a cluster's job), the same failure is retried as infrastructure.
    assert retry_policy(2)(node("run"), stuck(), 1) is True


def test_a_dispatch_notes_the_failure_in_its_worker_before_the_scheduler_hears_of_it() -> None:
    watch = EngineWatch()

    def dispatch(node: Node, context: Any) -> Any:
        raise stuck()

    with pytest.raises(EngineUnresponsive):
        watch.watching(dispatch)(node("run"), cast(Any, None))
    assert watch.holds(node("run", "beta")) is not None
