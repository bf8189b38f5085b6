"""The gateway relays the Gemini API: the route is found by `x-goog-api-key` or a `key=`
query, the real key goes in the same place, usage is read from `usageMetadata` (streamed
too), and the recorded traffic (which never holds a key) replays."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from agevalx.agents.mockapis import gemini
from agevalx.agents.mockllm import PROMPT_TOKENS, Reply
from agevalx.gateway.recording import TrafficLog
from agevalx.gateway.replaying import ModelDivergence, TrafficReplay
from agevalx.gateway.routes import Upstream
from agevalx.gateway.server import Gateway
from agevalx.gateway.usage import UsageReader
from agevalx.redaction import Redactor

pytestmark = pytest.mark.unit

REAL_KEY = "AIza-real-upstream-key-0123456789"
MODEL = "gemini-2.5-flash"
BODY = {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}
REPLY = Reply(text="one two three")


class GeminiUpstream:
    """An aiohttp server answering Gemini's model actions with the mock's responses; it keeps
    each request's headers and query."""

    def __init__(self) -> None:
        self.seen: list[tuple[dict[str, str], dict[str, str]]] = []
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.port = 0

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_post("/v1beta/models/{action}", self._action)
        runner = web.AppRunner(app)
        self._loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = runner.addresses[0][1]
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(runner.cleanup())

    async def _action(self, request: web.Request) -> web.StreamResponse:
        self.seen.append(({k.lower(): v for k, v in request.headers.items()}, dict(request.query)))
        model, action = request.match_info["action"].split(":")
        if action == "generateContent":
            return web.json_response(gemini.response(REPLY, model))
        chunks = gemini.stream_chunks(REPLY, model)
        if request.query.get("alt") != "sse":
            return web.json_response(chunks)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for chunk in chunks:
            await response.write(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
        await response.write_eof()
        return response

    def __enter__(self) -> GeminiUpstream:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


def _post(url: str, headers: dict[str, str]) -> tuple[int, str, bytes]:
    request = urllib.request.Request(
        url, data=json.dumps(BODY).encode(), headers={"Content-Type": "application/json", **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read()


def _text(data: bytes, streamed: bool) -> str:
    if streamed:
        lines = data.decode().splitlines()
        chunks = [json.loads(line[5:]) for line in lines if line.startswith("data:")]
    else:
        parsed = json.loads(data)
        chunks = parsed if isinstance(parsed, list) else [parsed]
    parts = [part for chunk in chunks for part in chunk["candidates"][0]["content"]["parts"]]
    return "".join(part.get("text", "") for part in parts)


def test_the_header_key_is_replaced_and_every_form_of_response_is_counted() -> None:
    with GeminiUpstream() as upstream, Gateway() as gateway:
        route = gateway.register(
            Upstream(base_url=f"http://127.0.0.1:{upstream.port}", api_key=REAL_KEY)
        )
        base = f"http://127.0.0.1:{gateway.port}/v1beta/models/{MODEL}"
        key = {"x-goog-api-key": route.token}
        answers = [
            _post(f"{base}:generateContent", key),
            _post(f"{base}:streamGenerateContent?alt=sse", key),
            _post(f"{base}:streamGenerateContent", key),
        ]
        refused = _post(f"{base}:generateContent", {"x-goog-api-key": "ageval-gw-unknown"})
    assert [status for status, _, _ in answers] == [200, 200, 200]
    assert answers[1][1].startswith("text/event-stream")
    assert [_text(data, n == 1) for n, (_, _, data) in enumerate(answers)] == [REPLY.text] * 3
    assert refused[0] == 401
    assert [headers["x-goog-api-key"] for headers, _ in upstream.seen] == [REAL_KEY] * 3
    assert all("authorization" not in headers for headers, _ in upstream.seen)
    assert [query for _, query in upstream.seen] == [{}, {"alt": "sse"}, {}]
    stats = route.stats.summary()
    assert stats["requests"] == 3
    assert stats["prompt_tokens"] == 3 * PROMPT_TOKENS
    assert stats["completion_tokens"] == 3 * 3
    assert stats["cached_tokens"] == 0


def test_a_query_key_is_replaced_in_the_relayed_url_and_never_recorded(tmp_path: Path) -> None:
    log = TrafficLog(tmp_path / "model.jsonl", Redactor([REAL_KEY]))
    with GeminiUpstream() as upstream, Gateway() as gateway:
        route = gateway.register(
            Upstream(base_url=f"http://127.0.0.1:{upstream.port}", api_key=REAL_KEY),
            log.recorder("solver"),
        )
        url = f"http://127.0.0.1:{gateway.port}/v1beta/models/{MODEL}:streamGenerateContent"
        status, _, data = _post(f"{url}?alt=sse&key={route.token}", {})
    assert status == 200 and _text(data, True) == REPLY.text
    ((headers, query),) = upstream.seen
    assert query == {"alt": "sse", "key": REAL_KEY}
    assert "x-goog-api-key" not in headers
    text = log.path.read_text()
    assert REAL_KEY not in text and route.token not in text and "key=" not in text
    (line,) = (json.loads(entry) for entry in text.splitlines())
    assert line["path"] == f"/v1beta/models/{MODEL}:streamGenerateContent"
    assert line["streamed"] is True
    assert line["response"][-1]["usageMetadata"]["candidatesTokenCount"] == 3
    assert route.stats.summary()["completion_tokens"] == 3


def test_recorded_gemini_traffic_replays_with_no_upstream(tmp_path: Path) -> None:
    path = tmp_path / "model.jsonl"
    log = TrafficLog(path, Redactor([REAL_KEY]))
    with GeminiUpstream() as upstream, Gateway() as gateway:
        route = gateway.register(
            Upstream(base_url=f"http://127.0.0.1:{upstream.port}", api_key=REAL_KEY),
            log.recorder("solver"),
        )
        base = f"http://127.0.0.1:{gateway.port}/v1beta/models/{MODEL}"
        key = {"x-goog-api-key": route.token}
        recorded = [_post(f"{base}:streamGenerateContent?alt=sse", key)[2]]
        recorded.append(_post(f"{base}:streamGenerateContent", key)[2])
    replay = TrafficReplay.read(path, Redactor([REAL_KEY]))
    with Gateway() as gateway:
        route = gateway.register(
            Upstream(base_url="http://127.0.0.1:9"), replay=replay.role("solver")
        )
        base = f"http://127.0.0.1:{gateway.port}/v1beta/models/{MODEL}"
        key = {"x-goog-api-key": route.token}
        streamed = _post(f"{base}:streamGenerateContent?alt=sse", key)
        whole = _post(f"{base}:streamGenerateContent", key)
        spent = _post(f"{base}:streamGenerateContent", key)
    assert streamed[1].startswith("text/event-stream") and _text(streamed[2], True) == REPLY.text
    assert json.loads(whole[2]) == json.loads(recorded[1])
    assert spent[0] == 409 and b"model_traffic_exhausted" in spent[2]
    assert route.stats.summary()["completion_tokens"] == 2 * 3


def test_the_usage_reader_takes_a_gemini_streams_last_totals_and_model() -> None:
    reader = UsageReader()
    first = {"candidates": [], "usageMetadata": {"promptTokenCount": 40}, "modelVersion": MODEL}
    last = {
        "candidates": [],
        "usageMetadata": {
            "promptTokenCount": 40,
            "candidatesTokenCount": 6,
            "thoughtsTokenCount": 4,
            "cachedContentTokenCount": 32,
        },
    }
    for chunk in (first, last):
        reader.feed_stream(b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n")
    usage = reader.usage()
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens) == (40, 10, 32)
    assert usage.model == MODEL


def _shell_turn(output: str) -> dict[str, Any]:
    response = {"output": output}
    part = {"functionResponse": {"name": "run_shell_command", "response": response}}
    return {"contents": [{"role": "user", "parts": [part]}]}


def test_replay_does_not_compare_the_process_ids_of_shell_commands(tmp_path: Path) -> None:
    path = tmp_path / "model.jsonl"
    log = TrafficLog(path, Redactor([]))
    recorded = _shell_turn("Output: hi\nProcess Group PGID: 49\nBackground PIDs: 51, 52")
    log.recorder("solver").record("POST", "/v1beta/models/m:generateContent", b"", 200, b"{}")
    log.recorder("solver").record(
        "POST", "/v1beta/models/m:generateContent", json.dumps(recorded).encode(), 200, b"{}"
    )
    replay = TrafficReplay.read(path, Redactor([]))
    same = _shell_turn("Output: hi\nProcess Group PGID: 50\nBackground PIDs: 61, 62")
    other = _shell_turn("Output: ho\nProcess Group PGID: 49\nBackground PIDs: 51, 52")
    path_ = "/v1beta/models/m:generateContent"
    assert not isinstance(replay.answer("solver", "POST", path_, b""), ModelDivergence)
    assert not isinstance(
        replay.answer("solver", "POST", path_, json.dumps(same).encode()), ModelDivergence
    )
    replay = TrafficReplay.read(path, Redactor([]))
    replay.answer("solver", "POST", path_, b"")
    divergence = replay.answer("solver", "POST", path_, json.dumps(other).encode())
    assert isinstance(divergence, ModelDivergence)
    assert "Output: ho" in divergence.difference and "<pid>" in divergence.difference
