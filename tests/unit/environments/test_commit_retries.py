"""A commit that a process still writing in the container cuts short is taken again with the
container frozen here, not by the engine's own pause (which commits unfrozen, silently, when
runc's freezer gives up); a container the freezer never freezes is committed again while its
commits tear."""

from __future__ import annotations

import time
from typing import Any

import docker
import pytest

from agevalx.environments import container as container_module
from agevalx.environments.container import AttemptContainer
from agevalx.environments.engine import EnvironmentFailure
from agevalx.failures import failure_class
from tests.unit.environments.freezer import GAVE_UP, NOT_PAUSED, THAW_REFUSED, Freezer

pytestmark = pytest.mark.unit

TORN = "Error processing tar file(exit status 1): unexpected EOF"


class _Api:
    def __init__(self, engine: _Engine) -> None:
        self.engine = engine

    def commit(self, container: str, **options: Any) -> dict[str, str]:
        engine = self.engine
        assert options["pause"] is False  # the engine's own pause can fail unseen
        engine.calls.append("commit-frozen" if engine.paused else "commit")
        if engine.failure is not None:
            raise docker.errors.APIError(engine.failure)
        if not engine.paused and engine.tears > 0:
            engine.tears -= 1
            raise docker.errors.APIError(TORN)
        return {"Id": "sha256:" + "ab" * 32}

    def tag(self, image: str, repository: str, tag: str) -> None:
        self.engine.calls.append("tag")


class _Client:
    def __init__(self, engine: _Engine) -> None:
        self.api = _Api(engine)


class _Engine(Freezer):
    """A container whose unfrozen commits tear `tears` times and whose first `refusals`
    pauses fail with `refusal`."""

    id = "c0ffee"

    def __init__(
        self,
        tears: int,
        refusals: int = 0,
        refusal: str = GAVE_UP,
        failure: str | None = None,
        thaw_refusals: int = 0,
        thaw_refusal: str = THAW_REFUSED,
    ) -> None:
        super().__init__(refusals, refusal, thaw_refusals, thaw_refusal)
        self.tears = tears
        self.failure = failure
        self.client = _Client(self)


@pytest.fixture(autouse=True)
def _no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "sleep", lambda seconds: None)


def _commit(engine: _Engine, pause: bool) -> str:
    reference, _ = AttemptContainer(engine).commit("ageval-test/commit", pause=pause)
    return reference


def test_an_unpaused_commit_that_holds_is_taken_once() -> None:
    engine = _Engine(tears=0)
    assert _commit(engine, pause=False) == "ageval-test/commit:" + "ab" * 16
    assert engine.calls == ["commit", "tag"]


def test_a_torn_unpaused_commit_is_taken_again_frozen_here() -> None:
    engine = _Engine(tears=1)
    _commit(engine, pause=False)
    assert engine.calls == ["commit", "pause", "commit-frozen", "unpause", "tag"]


def test_a_paused_commit_freezes_the_container_itself_and_thaws_it() -> None:
    engine = _Engine(tears=5)
    _commit(engine, pause=True)
    assert engine.calls == ["pause", "commit-frozen", "unpause", "tag"]
    assert not engine.paused


def test_a_freezer_that_gives_up_once_is_asked_again_before_the_commit() -> None:
    engine = _Engine(tears=5, refusals=2)
    _commit(engine, pause=True)
    assert engine.calls == ["pause", "pause", "pause", "commit-frozen", "unpause", "tag"]


def test_a_freezer_that_never_succeeds_leaves_commits_retried_while_they_tear() -> None:
    engine = _Engine(tears=3, refusals=container_module.PAUSE_TRIES)
    _commit(engine, pause=False)
    pauses = ["pause"] * container_module.PAUSE_TRIES
    assert engine.calls == ["commit", *pauses, "commit", "commit", "commit", "tag"]


def test_a_commit_torn_every_time_is_the_engines_error() -> None:
    engine = _Engine(tears=100, refusals=100)
    with pytest.raises(docker.errors.APIError, match="Error processing tar file"):
        _commit(engine, pause=False)
    assert engine.calls.count("commit") == 1 + container_module.UNFROZEN_TRIES


def test_a_container_the_engine_will_not_pause_is_not_asked_again_nor_thawed() -> None:
    engine = _Engine(tears=0, refusals=1, refusal="Container c0ffee is not running")
    _commit(engine, pause=True)
    assert engine.calls == ["pause", "commit", "tag"]


def test_a_commit_failing_otherwise_is_not_retried() -> None:
    engine = _Engine(tears=0, failure="no space left on device")
    with pytest.raises(docker.errors.APIError, match="no space left"):
        _commit(engine, pause=False)
    assert engine.calls == ["commit"]


def test_an_engine_that_will_not_thaw_at_once_is_asked_again() -> None:
    engine = _Engine(tears=0, thaw_refusals=2)
    _commit(engine, pause=True)
    assert engine.calls == ["pause", "commit-frozen", "unpause", "unpause", "unpause", "tag"]
    assert not engine.paused


def test_a_container_left_frozen_is_an_infrastructure_failure_not_a_hang() -> None:
    engine = _Engine(tears=0, thaw_refusals=100)
    with pytest.raises(EnvironmentFailure) as caught:
        _commit(engine, pause=True)
    assert caught.value.code == "unpause_failed" and "unable to thaw" in caught.value.message
    assert engine.calls.count("unpause") == container_module.PAUSE_TRIES
    assert failure_class("unpause_failed") == "infrastructure"


def test_a_container_no_longer_paused_is_not_thawed_again() -> None:
    engine = _Engine(tears=0, thaw_refusals=1, thaw_refusal=NOT_PAUSED)
    _commit(engine, pause=True)
    assert engine.calls == ["pause", "commit-frozen", "unpause", "tag"]
