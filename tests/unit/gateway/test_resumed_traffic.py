"""A resumed attempt's reuse of its cut-short traffic: the exchanges set aside answer the
redone requests while they match; the first that does not (or comes after them) goes to the
upstream, and so does every later request of its role. The split of model.jsonl on resume."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from agevalx.agents.mockllm import MockLLM
from agevalx.gateway.attempt import AttemptRoutes
from agevalx.gateway.recording import ABANDONED_TRAFFIC, MODEL_TRAFFIC, TrafficLog
from agevalx.gateway.replaying import (
    DIVERGED,
    EXHAUSTED,
    Exchange,
    ModelDivergence,
    ResumedTraffic,
)
from agevalx.gateway.routes import Upstream
from agevalx.gateway.server import Gateway
from agevalx.redaction import Redactor
from agevalx.runner.activity import ActivityJournal, ActivityRecord
from agevalx.runner.recovery import ResumePoint, model_lines_kept, set_aside

KEY = "sk-real-upstream-key-0123456789"
PATH = "/v1/chat/completions"
SCRIPT = [{"message": "one"}, {"message": "two"}, {"message": "three"}, {"message": "four"}]


def _body(*turns: str) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": turn} for turn in turns]}


def _post(gateway: Gateway, token: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{gateway.port}/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            data = response.read()
            if response.headers["Content-Type"] == "text/event-stream":
                return response.status, {"stream": data.decode()}
            return response.status, json.loads(data)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _answer(reply: dict[str, Any]) -> str:
    return str(reply["choices"][0]["message"]["content"])


def _record(directory: Path, roles: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Each role's requests through the gateway into `directory`'s model.jsonl (a run the
    process was killed in); the usage the gateway counted, per role."""
    log = TrafficLog(directory / MODEL_TRAFFIC, Redactor([KEY]))
    usage = {}
    with MockLLM(SCRIPT) as mock, Gateway() as gateway:
        for role, bodies in roles.items():
            route = gateway.register(Upstream(base_url=mock.url, api_key=KEY), log.recorder(role))
            for body in bodies:
                assert _post(gateway, route.token, body)[0] == 200
            usage[role] = route.stats.summary()
    return usage


def _checkpoint(seq: int, model_lines: int | None) -> ActivityRecord:
    detail = {"key": "k"} if model_lines is None else {"key": "k", "model_lines": model_lines}
    return ActivityRecord(
        seq=seq, time="2026-12-03T00:00:00.000Z", type="checkpoint", detail=detail
    )


def _invocation(seq: int) -> ActivityRecord:
    return ActivityRecord(seq=seq, time="2026-12-03T00:00:00.000Z", type="invocation", role="r")


def _resume(directory: Path, point: ResumePoint) -> ResumedTraffic:
    """What a resume does: the reuse is made, then the journal and the traffic set aside."""
    reuse = ResumedTraffic(directory / ABANDONED_TRAFFIC, Redactor([KEY]))
    set_aside(ActivityJournal(directory / "activity.jsonl"), point)
    return reuse


@pytest.mark.unit
def test_reuse_answers_while_it_matches_then_the_role_goes_live(tmp_path: Path) -> None:
    first, second, third = _body("a"), _body("a", "b"), _body("a", "b", "c")
    _record(tmp_path, {"solver": [first, second, third]})
    reuse = _resume(tmp_path, ResumePoint([], [], 0.0))  # died in the first invocation
    assert not (tmp_path / MODEL_TRAFFIC).read_text()
    log = TrafficLog(tmp_path / MODEL_TRAFFIC, Redactor([KEY]))
    with MockLLM(SCRIPT[2:]) as mock, Gateway() as gateway:
        routes = AttemptRoutes(
            gateway, {"solver": {"base_url": mock.url, "api_key": KEY}}, log, reuse
        )
        token = routes.routes["solver"].token
        answers = [_post(gateway, token, body) for body in (first, second)]
        assert [_answer(reply) for _, reply in answers] == ["one", "two"]
        assert mock.requests == [], "the recorded answers were not asked for again"
        changed = _body("a", "b", "other")
        status, reply = _post(gateway, token, changed)
        assert (status, _answer(reply)) == (200, "three")
        status, reply = _post(gateway, token, third)  # matches a recorded one, but too late
        assert (status, _answer(reply)) == (200, "four")
        assert [request.body for request in mock.completions] == [changed, third]
        stats = routes.routes["solver"].stats
        assert (stats.requests, stats.reused) == (4, 2)
        assert routes.reused() == {"solver": 2}
        assert stats.prompt_tokens == 4 * 10, "reused answers count in the usage"
    live = reuse.live["solver"]
    assert (live.code, live.index, live.source_seq) == (DIVERGED, 2, 3)
    recorded = [json.loads(line) for line in (tmp_path / MODEL_TRAFFIC).read_text().splitlines()]
    assert [line["seq"] for line in recorded] == [1, 2, 3, 4]
    assert [line["request"] for line in recorded] == [first, second, changed, third]
    assert KEY not in (tmp_path / MODEL_TRAFFIC).read_text()


@pytest.mark.unit
def test_each_role_goes_live_on_its_own_after_its_recorded_requests(tmp_path: Path) -> None:
    _record(tmp_path, {"solver": [_body("s")], "critic": [_body("c")]})
    reuse = _resume(tmp_path, ResumePoint([], [], 0.0))
    solver = reuse.answer("solver", "POST", PATH, b'{"other": 1}')
    assert isinstance(solver, ModelDivergence) and solver.code == DIVERGED
    again = reuse.answer("solver", "POST", PATH, json.dumps(_body("s")).encode())
    assert again is solver, "the solver's later requests go to the upstream too"
    critic = reuse.answer("critic", "POST", PATH, json.dumps(_body("c")).encode())
    assert isinstance(critic, Exchange), "the critic's recorded answer still serves"
    exhausted = reuse.answer("critic", "POST", PATH, b"{}")
    assert isinstance(exhausted, ModelDivergence)
    assert (exhausted.code, exhausted.index) == (EXHAUSTED, 1)
    assert reuse.divergence is None and reuse.served == {"critic": 1}


@pytest.mark.unit
def test_a_resume_keeps_the_lines_of_the_last_checkpoint_and_sets_the_rest_aside(
    tmp_path: Path,
) -> None:
    bodies = [_body("a"), _body("a", "b"), _body("a", "b", "c")]
    _record(tmp_path, {"solver": bodies})
    earlier = b'{"from": "an earlier resume"}\n'
    (tmp_path / ABANDONED_TRAFFIC).write_bytes(earlier)
    with (tmp_path / MODEL_TRAFFIC).open("a") as handle:
        handle.write('{"seq": 4, "role": "solver", "req')  # the kill cut this line
    reuse = _resume(tmp_path, ResumePoint([_invocation(0), _checkpoint(1, 1)], [], 0.0))
    kept = (tmp_path / MODEL_TRAFFIC).read_text().splitlines()
    assert [json.loads(line)["request"] for line in kept] == bodies[:1]
    assert (tmp_path / ABANDONED_TRAFFIC).read_bytes().startswith(earlier)
    assert TrafficLog(tmp_path / MODEL_TRAFFIC, Redactor([])).lines == 1
    found = reuse.answer("solver", "POST", PATH, json.dumps(bodies[1]).encode())
    assert isinstance(found, Exchange) and found.seq == 2, "only this resume's, whole lines"
    assert [item.request for item in reuse.exchanges["solver"]] == bodies[1:]


@pytest.mark.unit
def test_which_model_lines_a_resume_keeps() -> None:
    assert model_lines_kept(ResumePoint([], [], 0.0)) == 0
    assert model_lines_kept(ResumePoint([_invocation(0), _checkpoint(1, 7)], [], 0.0)) == 7
    assert model_lines_kept(ResumePoint([_checkpoint(1, 7), _invocation(2)], [], 0.0)) is None
    assert model_lines_kept(ResumePoint([_invocation(0), _checkpoint(1, None)], [], 0.0)) is None


@pytest.mark.unit
def test_a_resumed_attempts_usage_counts_the_exchanges_it_kept(tmp_path: Path) -> None:
    streamed = {**_body("a", "b"), "stream": True, "stream_options": {"include_usage": True}}
    paid = _record(tmp_path, {"solver": [_body("a"), streamed, _body("a", "b", "c")]})
    reuse = _resume(tmp_path, ResumePoint([_invocation(0), _checkpoint(1, 2)], [], 0.0))
    log = TrafficLog(tmp_path / MODEL_TRAFFIC, Redactor([KEY]))
    with MockLLM(SCRIPT[2:]) as mock, Gateway() as gateway:
        routes = AttemptRoutes(
            gateway, {"solver": {"base_url": mock.url, "api_key": KEY}}, log, reuse
        )
        status, _ = _post(gateway, routes.routes["solver"].token, _body("a", "b", "c"))
        assert status == 200 and mock.requests == [], "answered from the set-aside exchange"
        resumed = {"solver": {**paid["solver"], "reused": 1}}
        assert routes.summary() == resumed
        assert routes.summary() == resumed, "the kept exchanges are counted once"
