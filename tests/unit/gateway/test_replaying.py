"""Model-traffic replay in the gateway: traffic recorded against the mock model server is
served back, streamed as streams, with the mock server stopped; a request the recording does
not hold is the divergence."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from agevalx.agents.mockllm import PROMPT_TOKENS, MockLLM
from agevalx.errors import UsageError
from agevalx.gateway.recording import TrafficLog
from agevalx.gateway.replaying import TrafficReplay, first_difference, request_digest
from agevalx.gateway.routes import Upstream
from agevalx.gateway.server import Gateway
from agevalx.redaction import Redactor

KEY = "sk-real-upstream-key-0123456789"
SCRIPT = [{"message": "one two three"}, {"message": "four five"}]
FIRST = {"model": "m", "messages": [{"role": "user", "content": f"hi {KEY}"}]}
SECOND = {
    "model": "m",
    "stream": True,
    "stream_options": {"include_usage": True},
    "messages": [{"role": "user", "content": "again"}],
}


def _post(gateway: Gateway, token: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{gateway.port}/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read()


def _record(tmp_path: Path) -> tuple[Path, list[bytes]]:
    path = tmp_path / "model.jsonl"
    log = TrafficLog(path, Redactor([KEY]))
    with MockLLM(SCRIPT) as mock, Gateway() as gateway:
        route = gateway.register(Upstream(base_url=mock.url, api_key=KEY), log.recorder("solver"))
        answers = [_post(gateway, route.token, body)[2] for body in (FIRST, SECOND)]
    return path, answers


@pytest.mark.unit
def test_recorded_traffic_is_served_back_with_no_upstream(tmp_path: Path) -> None:
    path, answers = _record(tmp_path)
    replay = TrafficReplay.read(path, Redactor([KEY]))
    with Gateway() as gateway:  # the mock server is stopped: its port answers nothing
        upstream = Upstream(base_url="http://127.0.0.1:9/v1")
        route = gateway.register(upstream, None, replay.role("solver"))
        # the same requests, their keys in another order: the digest is of the canonical body
        status, kind, data = _post(gateway, route.token, dict(reversed(list(FIRST.items()))))
        assert (status, kind) == (200, "application/json")
        assert json.loads(data) == json.loads(answers[0])
        status, kind, data = _post(gateway, route.token, SECOND)
        assert (status, kind) == (200, "text/event-stream")
        events = [line for line in data.split(b"\n") if line.startswith(b"data:")]
        recorded = [line for line in answers[1].split(b"\n") if line.startswith(b"data:")]
        assert [e[5:].strip() for e in events][-1] == b"[DONE]"
        assert [json.loads(e[5:]) for e in events[:-1]] == [
            json.loads(r[5:]) for r in recorded[:-1]
        ]
        assert route.stats.requests == 2, "usage is read from the replayed answers"
        assert (route.stats.prompt_tokens, route.stats.completion_tokens) == (
            2 * PROMPT_TOKENS,
            3 + 2,
        )
        assert replay.divergence is None and replay.served == {"solver": 2}
        status, _, data = _post(gateway, route.token, SECOND)
    assert status == 409
    assert json.loads(data)["error"]["code"] == "model_traffic_exhausted"
    assert replay.divergence is not None and replay.divergence.index == 2


@pytest.mark.unit
def test_the_first_differing_request_is_the_divergence(tmp_path: Path) -> None:
    path, _ = _record(tmp_path)
    replay = TrafficReplay.read(path, Redactor([KEY]))
    with Gateway() as gateway:
        route = gateway.register(
            Upstream(base_url="http://127.0.0.1:9/v1"), None, replay.role("solver")
        )
        assert _post(gateway, route.token, FIRST)[0] == 200
        changed = {**SECOND, "messages": [{"role": "user", "content": "other"}]}
        status, _, data = _post(gateway, route.token, changed)
        assert status == 409
        assert _post(gateway, route.token, SECOND)[0] == 409, "the replay ended at the divergence"
    divergence = replay.divergence
    assert divergence is not None
    assert (divergence.code, divergence.role, divergence.index, divergence.source_seq) == (
        "model_traffic_diverged",
        "solver",
        1,
        2,
    )
    assert divergence.difference == '/messages/0/content: "other", recorded "again"'
    assert divergence.actual_digest == request_digest(changed)
    assert json.loads(data)["error"]["code"] == "model_traffic_diverged"


@pytest.mark.unit
def test_differences_and_malformed_recordings(tmp_path: Path) -> None:
    assert first_difference({"a": [1, 2]}, {"a": [1, 2]}) is None
    assert first_difference({"a": [1, 2]}, {"a": [1]}) == "/a: 1 items, recorded 2"
    assert first_difference({"a": 1}, {"a": 1, "b": 2}) == "/b: not recorded (got 2)"
    assert first_difference({"a": 1}, {"a": True}) == "/a: true, recorded 1"
    prompt = "You are an agent. " * 20
    shown = first_difference({"s": prompt + "Date: 1"}, {"s": prompt + "Date: 2"})
    assert shown is not None and shown.startswith(f"/s: at character {len(prompt) + 6}: ...")
    assert 'agent. Date: 2"' in shown and 'agent. Date: 1"' in shown
    assert request_digest({"a": 1, "b": 2}) == request_digest({"b": 2, "a": 1})
    bad = tmp_path / "model.jsonl"
    bad.write_text('{"seq": 1}\n')
    with pytest.raises(UsageError) as caught:
        TrafficReplay.read(bad, Redactor([]))
    assert caught.value.code == "model_traffic_malformed"
    with pytest.raises(UsageError) as caught:
        TrafficReplay.read(tmp_path / "absent.jsonl", Redactor([]))
    assert caught.value.code == "model_traffic_missing"
