"""The model gateway against real servers on loopback: the project's mock model server, and
a small aiohttp upstream speaking the Anthropic and responses shapes."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from agevalx.agents.mockllm import PROMPT_TOKENS, MockLLM
from agevalx.gateway import server as gateway_server
from agevalx.gateway.recording import TrafficLog
from agevalx.gateway.routes import Upstream
from agevalx.gateway.server import Gateway
from agevalx.gateway.usage import load_prices
from agevalx.redaction import Redactor

REAL_KEY = "sk-real-upstream-key-0123456789"
SCRIPT = [{"message": "one two three"}, {"message": "four"}]


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    with Gateway() as running:
        yield running


@pytest.fixture
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> float:
    monkeypatch.setattr(gateway_server, "RETRY_INTERVAL_SECONDS", 0.1)
    return 0.1


def _post(
    url: str, body: dict[str, Any], headers: dict[str, str], timeout: float = 20
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json", **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def _chat(gateway: Gateway, token: str, body: dict[str, Any]) -> tuple[int, bytes]:
    route_url = f"http://127.0.0.1:{gateway.port}/v1/chat/completions"
    status, _, data = _post(route_url, body, {"Authorization": f"Bearer {token}"})
    return status, data


@pytest.mark.unit
def test_the_gateway_forwards_with_the_real_key_and_counts_usage(gateway: Gateway) -> None:
    with MockLLM(SCRIPT, model="gpt-5.4-mini") as mock:
        route = gateway.register(Upstream(base_url=mock.url, api_key=REAL_KEY))
        assert gateway.base_url(route) == f"http://127.0.0.1:{gateway.port}/v1"
        status, data = _chat(gateway, route.token, {"model": "gpt-5.4-mini"})
        assert status == 200
        assert json.loads(data)["choices"][0]["message"]["content"] == "one two three"
        streamed = {
            "model": "gpt-5.4-mini",
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        status, data = _chat(gateway, route.token, streamed)
        assert status == 200 and data.rstrip().endswith(b"data: [DONE]")
        assert [r.authorization for r in mock.completions] == [f"Bearer {REAL_KEY}"] * 2
        status, _ = _chat(gateway, "ageval-gw-not-a-token", {"model": "m"})
        assert status == 401 and len(mock.completions) == 2
    stats = route.stats.summary()
    completion_tokens = 3 + 1
    assert stats["requests"] == 2
    assert stats["prompt_tokens"] == 2 * PROMPT_TOKENS
    assert stats["completion_tokens"] == completion_tokens
    price = load_prices().models["gpt-5.4-mini"]
    expected = (2 * PROMPT_TOKENS * price.input + completion_tokens * price.output) / 1e6
    assert stats["cost_usd"] == pytest.approx(expected)
    assert stats["retries"] == 0 and stats["wait_seconds"] == 0


@pytest.mark.unit
def test_cost_is_the_providers_when_reported_and_unknown_without_a_price(
    gateway: Gateway,
) -> None:
    with MockLLM(SCRIPT, cost=0.0125) as reported, MockLLM(SCRIPT) as unpriced:
        paid = gateway.register(Upstream(base_url=reported.url))
        free = gateway.register(Upstream(base_url=unpriced.url))
        for route in (paid, free):
            assert _chat(gateway, route.token, {"model": "no-such-model"})[0] == 200
            assert _chat(gateway, route.token, {"model": "no-such-model"})[0] == 200
        assert unpriced.completions[0].authorization is None, "no key: no header"
    assert paid.stats.summary()["cost_usd"] == pytest.approx(0.025)
    assert free.stats.summary()["cost_usd"] == "unknown"
    assert free.stats.summary()["prompt_tokens"] == 2 * PROMPT_TOKENS


@pytest.mark.unit
def test_a_stalled_upstream_is_retried_until_it_recovers(
    gateway: Gateway, fast_retries: float
) -> None:
    with MockLLM(SCRIPT, failures=3) as mock:
        route = gateway.register(Upstream(base_url=mock.url, stall_seconds=30))
        started = time.monotonic()
        status, data = _chat(gateway, route.token, {"model": "m"})
        took = time.monotonic() - started
    assert status == 200 and b"one two three" in data
    assert len(mock.completions) == 4
    assert route.stats.retries == 3 and route.stats.failure is None
    assert route.stats.wait_seconds == pytest.approx(3 * fast_retries)
    assert took >= 3 * fast_retries


@pytest.mark.unit
def test_a_longer_retry_after_is_honoured(gateway: Gateway, fast_retries: float) -> None:
    with MockLLM(SCRIPT, failures=1, failure_status=429, retry_after="1") as mock:
        route = gateway.register(Upstream(base_url=mock.url, stall_seconds=30))
        started = time.monotonic()
        assert _chat(gateway, route.token, {"model": "m"})[0] == 200
        took = time.monotonic() - started
        gap = mock.completions[1].time - mock.completions[0].time
    assert route.stats.retries == 1 and route.stats.wait_seconds == 1.0
    assert took >= 1.0 and gap >= 1.0


@pytest.mark.unit
def test_an_upstream_that_never_recovers_fails_at_once_with_a_zero_stall(
    gateway: Gateway, fast_retries: float
) -> None:
    with MockLLM(SCRIPT, failures=-1) as mock:
        route = gateway.register(Upstream(base_url=mock.url, stall_seconds=0))
        status, data = _chat(gateway, route.token, {"model": "m"})
        assert len(mock.completions) == 1
        bounded = gateway.register(Upstream(base_url=mock.url, stall_seconds=0.55))
        started = time.monotonic()
        assert _chat(gateway, bounded.token, {"model": "m"})[0] == 503
        took = time.monotonic() - started
    assert status == 503
    assert json.loads(data)["error"]["code"] == "model_upstream_unavailable"
    assert route.stats.failure == "model_upstream_unavailable" and route.stats.retries == 0
    assert bounded.stats.failure == "model_upstream_unavailable"
    # retried at the 0.1 s interval until the 0.55 s stall was spent: about 5 times, at most
    # 6; fewer when each try's round trip is slow (3 beside the suite's serial phase), but
    # more than once, which a 60 s interval would not allow
    assert 2 <= bounded.stats.retries <= 6 and 0.4 <= took < 3


@pytest.mark.unit
def test_model_timeout_bounds_one_upstream_request(gateway: Gateway, fast_retries: float) -> None:
    with MockLLM(SCRIPT, failures=1, failure_delay=3.0) as mock:
        route = gateway.register(Upstream(base_url=mock.url, timeout=0.5, stall_seconds=30))
        started = time.monotonic()
        status, _ = _chat(gateway, route.token, {"model": "m"})
        took = time.monotonic() - started
    assert status == 200 and route.stats.retries == 1
    assert took < 2.5, "the hanging request was abandoned after model.timeout"


# --- Anthropic messages and OpenAI responses, streamed, through a small upstream ------------


class _Upstream:
    """An aiohttp server with Anthropic- and responses-shaped answers; records headers."""

    def __init__(self, pause: float = 0.0) -> None:
        self.pause = pause
        self.headers: list[dict[str, str]] = []
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.port = 0

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/responses", self._responses)
        runner = web.AppRunner(app)
        self._loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = runner.addresses[0][1]
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(runner.cleanup())

    async def _events(self, request: web.Request, events: list[dict[str, Any]]) -> Any:
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for number, event in enumerate(events):
            if number == 1 and self.pause:
                await asyncio.sleep(self.pause)
            line = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
            await response.write(line.encode())
        await response.write_eof()
        return response

    async def _messages(self, request: web.Request) -> Any:
        usage = {"input_tokens": 30, "cache_read_input_tokens": 20, "output_tokens": 1}
        return await self._events(
            request,
            [
                {
                    "type": "message_start",
                    "message": {"model": "claude-sonnet-4-5", "usage": usage},
                },
                {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "hi"}},
                {"type": "message_delta", "usage": {"output_tokens": 7}},
                {"type": "message_stop"},
            ],
        )

    async def _responses(self, request: web.Request) -> Any:
        usage = {
            "input_tokens": 12,
            "output_tokens": 5,
            "input_tokens_details": {"cached_tokens": 2},
        }
        return await self._events(
            request,
            [
                {"type": "response.created", "response": {"model": "gpt-5.4"}},
                {"type": "response.output_text.delta", "delta": "hello"},
                {"type": "response.completed", "response": {"model": "gpt-5.4", "usage": usage}},
            ],
        )

    def __enter__(self) -> _Upstream:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


@pytest.mark.unit
def test_anthropic_messages_and_responses_streams_are_relayed_and_counted(
    gateway: Gateway,
) -> None:
    with _Upstream() as upstream:
        route = gateway.register(
            Upstream(base_url=f"http://127.0.0.1:{upstream.port}", api_key=REAL_KEY)
        )
        base = f"http://127.0.0.1:{gateway.port}"
        status, headers, data = _post(
            base + "/v1/messages",
            {"model": "claude-sonnet-4-5", "stream": True},
            {"x-api-key": route.token, "anthropic-version": "2023-06-01"},
        )
        assert status == 200 and headers["Content-Type"].startswith("text/event-stream")
        assert b"message_stop" in data and b"text_delta" in data
        status, _, data = _post(
            base + "/v1/responses",
            {"model": "gpt-5.4", "stream": True},
            {"Authorization": f"Bearer {route.token}"},
        )
        assert status == 200 and b"response.completed" in data
    anthropic, responses = upstream.headers
    assert anthropic["x-api-key"] == REAL_KEY and "authorization" not in anthropic
    assert anthropic["anthropic-version"] == "2023-06-01"
    assert responses["authorization"] == f"Bearer {REAL_KEY}"
    assert "x-api-key" not in responses
    stats = route.stats.summary()
    assert stats["requests"] == 2
    assert stats["prompt_tokens"] == (30 + 20) + 12, "Anthropic's input leaves out cache reads"
    assert stats["cached_tokens"] == 20 + 2
    assert stats["completion_tokens"] == 7 + 5
    prices = load_prices().models
    claude, gpt = prices["claude-sonnet-4-5"], prices["gpt-5.4"]
    expected = (
        30 * claude.input
        + 20 * (claude.cached_input or 0)
        + 7 * claude.output
        + 10 * gpt.input
        + 2 * (gpt.cached_input or 0)
        + 5 * gpt.output
    ) / 1e6
    assert stats["cost_usd"] == pytest.approx(expected)


@pytest.mark.unit
def test_model_watchdog_bounds_silence_inside_a_stream(gateway: Gateway) -> None:
    with _Upstream(pause=2.0) as upstream:
        route = gateway.register(
            Upstream(base_url=f"http://127.0.0.1:{upstream.port}", watchdog=0.3)
        )
        url = f"http://127.0.0.1:{gateway.port}/v1/messages"
        started = time.monotonic()
        with pytest.raises((OSError, http.client.HTTPException)):
            _post(url, {"stream": True}, {"x-api-key": route.token})
        assert time.monotonic() - started < 1.8
    assert "stream broke" in route.stats.failure_message


@pytest.mark.unit
def test_every_exchange_is_recorded_with_secrets_masked(gateway: Gateway, tmp_path: Path) -> None:
    secret = "sk-in-the-prompt-0123456789"
    log = TrafficLog(tmp_path / "runs/a/model.jsonl", Redactor([secret, REAL_KEY]))
    with MockLLM(SCRIPT) as mock:
        route = gateway.register(Upstream(base_url=mock.url, api_key=REAL_KEY), log.recorder("x"))
        plain = {"model": "m", "messages": [{"role": "user", "content": f"key {secret}"}]}
        assert _chat(gateway, route.token, plain)[0] == 200
        assert _chat(gateway, route.token, {"model": "m", "stream": True})[0] == 200
    text = log.path.read_text()
    assert secret not in text and REAL_KEY not in text and route.token not in text
    first, second = (json.loads(line) for line in text.splitlines())
    assert (first["seq"], first["role"], first["streamed"]) == (1, "x", False)
    assert first["request"]["messages"][0]["content"] == "key ***"
    assert first["response"]["choices"][0]["message"]["content"] == "one two three"
    assert second["streamed"] is True and second["response"][-1] == "[DONE]"
    assert second["response"][1]["choices"][0]["delta"]["content"] == "four"
    assert first["request_digest"] != second["request_digest"]


@pytest.mark.unit
def test_running_out_of_wall_time_while_held_is_an_upstream_error(
    gateway: Gateway, fast_retries: float
) -> None:
    from agevalx.errors import AgevalError
    from agevalx.gateway.attempt import AttemptRoutes

    with MockLLM(SCRIPT, failures=-1) as mock:
        profile = {"executor": "acp", "base_url": mock.url, "options": {}}
        routes = AttemptRoutes(gateway, {"solver": profile})
        token = routes.environ("solver", {})["AGEVAL_API_KEY"]

        def request() -> None:
            with contextlib.suppress(OSError, http.client.HTTPException):
                _chat(gateway, token, {"model": "m"})

        held = threading.Thread(target=request, daemon=True)
        held.start()
        deadline = time.monotonic() + 10
        while not routes.routes["solver"].stats.retries and time.monotonic() < deadline:
            time.sleep(0.05)
        routes.check("solver")  # still holding, not failed: no error on its own
        with pytest.raises(AgevalError) as caught:
            routes.check("solver", out_of_time=True)
        routes.close()
    assert caught.value.code == "model_upstream_unavailable"
    assert "wall time ran out" in caught.value.message


@pytest.mark.unit
def test_streams_reuse_one_kept_alive_upstream_connection(gateway: Gateway) -> None:
    """The gateway's pooled client keeps its upstream connection between requests, streamed
    ones included (the mock streams in chunks and keeps the connection, as providers do)."""
    streamed = {"model": "m", "stream": True}
    with MockLLM([{"message": "hi"}] * 12) as mock:
        route = gateway.register(Upstream(base_url=mock.url, api_key=REAL_KEY))
        for _ in range(4):
            status, data = _chat(gateway, route.token, streamed)
            assert status == 200 and data.rstrip().endswith(b"data: [DONE]")
            status, _ = _chat(gateway, route.token, {"model": "m"})
            assert status == 200
        direct = http.client.HTTPConnection("127.0.0.1", mock.port, timeout=10)
        for _ in range(3):  # a client of the mock's own keeps its connection too
            direct.request("POST", "/v1/chat/completions", body=json.dumps(streamed))
            response = direct.getresponse()
            assert response.read().rstrip().endswith(b"data: [DONE]")
        direct.close()
        peers = [request.peer for request in mock.completions]
    assert len(peers) == 11
    assert len(set(peers[:8])) == 1, "one upstream connection for every relayed request"
    assert len(set(peers[8:])) == 1


@pytest.mark.unit
def test_a_stream_stalled_mid_response_is_model_stream_broken(gateway: Gateway) -> None:
    faults = [{"kind": "stall", "at": [0], "seconds": 3}]
    with MockLLM(SCRIPT, faults=faults) as mock:
        route = gateway.register(Upstream(base_url=mock.url, watchdog=0.5))
        body = {"model": "m", "stream": True}
        with contextlib.suppress(http.client.IncompleteRead, ConnectionError):
            _chat(gateway, route.token, body)
        assert route.stats.failure == "model_stream_broken"
        assert "mid-response" in route.stats.failure_message
        assert mock.faults_served == {"stall": 1}


@pytest.mark.unit
def test_the_concurrency_figures_name_each_upstream_and_count_its_429s(
    gateway: Gateway, fast_retries: float
) -> None:
    faults = [{"kind": "429", "start": 0, "count": 2}]
    with MockLLM(SCRIPT, faults=faults) as mock:
        route = gateway.register(Upstream(base_url=mock.url, stall_seconds=30))
        assert _chat(gateway, route.token, {"model": "soak-model"})[0] == 200
        (figure,) = gateway.concurrency()
        assert figure["origin"] == mock.url and figure["model"] == "soak-model"
    assert figure["throttled"] == 2 and figure["in_flight"] == 0
    # halved by each 429 (each try is sent after the previous halving), then one success
    # at a limit of 1 grows it back to 2
    assert [limit for _, limit in figure["curve"]] == [4, 2, 1, 2]
    assert "soak-model@" in gateway.concurrency_line()
