"""The model gateway: a host-side HTTP server between agents and their model providers.

ageval starts one gateway per process while a run needs it (`shared_gateway`) and gives each
attempt's model role a route: a random per-attempt token plus the upstream (the profile's
`base_url`, the real API key, `model.timeout`, `model.watchdog`, the stall budget). The
agent is configured with the gateway's address and the token as its API key; the gateway
finds the route by the token (`Authorization: Bearer` or Anthropic's `x-api-key`), puts the
real key in its place and forwards the request to `<base_url origin><request path>`. The real
key stays in this process: it never enters the attempt container.

Gemini's clients send their key in `x-goog-api-key`, or as a `key=` query parameter: the
gateway finds the route by either and relays the real key in the same place (a query's key
is replaced in the relayed URL only; what is recorded is the path, which has no query).

The gateway relays any path, so OpenAI chat completions, OpenAI responses, Anthropic
messages and Gemini's generateContent all pass, streamed (server-sent events, relayed chunk
by chunk; Gemini's JSON-array stream as one body) or not. The usage of each response is read
on the way (`usage`).

Stalls: a connect error, a timeout, a 5xx or a 429 before the response starts holds the
agent's request and retries the upstream every `RETRY_INTERVAL_SECONDS` (or after a longer
`Retry-After`) until `upstream_stall_seconds` have passed (0: fail at once). Then the agent
gets a 503 and the route records `model_upstream_unavailable`, which the run stage turns into
an infrastructure ERROR. `model.timeout` bounds one upstream request (the stream included);
`model.watchdog` bounds the silence between two pieces of a response.

A route with a replay answers from it (`ageval replay --model-traffic`); a resumed attempt's
replay (the traffic it set aside) answers while it matches and then lets requests through to
the upstream.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import secrets
import threading
import time
from collections.abc import Iterator
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlencode

import aiohttp
from aiohttp import web

from agevalx.gateway.budget import JOB_LIMIT
from agevalx.gateway.concurrency import Concurrency, Limiter
from agevalx.gateway.recording import TrafficRecorder
from agevalx.gateway.replaying import ModelDivergence, RoleReplay
from agevalx.gateway.routes import STREAM_BROKEN, UNAVAILABLE, Route, Upstream
from agevalx.gateway.usage import UsageReader, is_token_count, path_model, priced_cost

RETRY_INTERVAL_SECONDS = 60.0
"""Seconds between two tries of a failing upstream (fixed by the spec; tests patch it)."""

TOKEN_PREFIX = "ageval-gw-"
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "content-encoding",
        "accept-encoding",
        "authorization",
        "x-api-key",
        "x-goog-api-key",
    }
)
KEY_QUERY = "key"
"""The query parameter Gemini's clients may carry their key in."""
MAX_BODY_BYTES = 64 * 1024 * 1024
SHUTDOWN_SECONDS = 2.0
"""How long a stopping gateway lets requests still in flight finish."""


class _Retry(Exception):
    def __init__(
        self, reason: str, retry_after: float | None = None, *, throttled: bool = False
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.throttled = throttled
        """A 429: the upstream's concurrency limit halves."""


def retry_after_seconds(value: str | None) -> float | None:
    """A `Retry-After` header (seconds or an HTTP date) in seconds from now."""
    if not value:
        return None
    value = value.strip()
    with contextlib.suppress(ValueError):
        return max(0.0, float(value))
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


class Gateway:
    """The server. `start()` runs it on its own event loop thread; `stop()` ends it."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self._port = port
        self._routes: dict[str, Route] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._concurrency = Concurrency()

    def concurrency(self) -> list[dict[str, Any]]:
        """Per upstream (base URL and model): the concurrency limit, its peak, the requests
        in flight, the 429s and the limit's curve (see `concurrency`)."""
        return self._concurrency.figures()

    def concurrency_line(self) -> str:
        """The limits per upstream in one line (empty before the first request)."""
        return self._concurrency.line()

    # --- routes ----------------------------------------------------------------------------

    def register(
        self,
        upstream: Upstream,
        recorder: TrafficRecorder | None = None,
        replay: RoleReplay | None = None,
    ) -> Route:
        token = TOKEN_PREFIX + secrets.token_hex(16)
        route = Route(token=token, upstream=upstream, recorder=recorder, replay=replay)
        with self._lock:
            self._routes[route.token] = route
        return route

    def unregister(self, route: Route) -> None:
        with self._lock:
            self._routes.pop(route.token, None)

    def base_url(self, route: Route, host: str | None = None) -> str:
        """The URL an agent is given for `route` (the upstream's path on the gateway)."""
        name = host or self.host
        with contextlib.suppress(ValueError):
            if ipaddress.ip_address(name).version == 6:
                name = f"[{name}]"
        return f"http://{name}:{self.port}{route.upstream.path}"

    @property
    def port(self) -> int:
        if self._runner is None:
            raise RuntimeError("the gateway is not running")
        return self._bound_port

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> Gateway:
        started = threading.Event()
        failure: list[BaseException] = []

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._open())
            except BaseException as exc:
                failure.append(exc)
                started.set()
                loop.close()
                return
            started.set()
            loop.run_forever()
            loop.run_until_complete(self._close())
            loop.close()

        self._thread = threading.Thread(target=serve, name="ageval.gateway", daemon=True)
        self._thread.start()
        started.wait()
        if failure:
            self._thread.join()
            self._thread = None
            raise failure[0]
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        self._loop = None
        self._thread = None
        self._runner = None

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _open(self) -> None:
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = web.AppRunner(
            app, access_log=None, handle_signals=False, shutdown_timeout=SHUTDOWN_SECONDS
        )
        await runner.setup()
        site = web.TCPSite(runner, self.host, self._port)
        await site.start()
        self._bound_port = int(runner.addresses[0][1])
        self._runner = runner
        connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=60)
        self._session = aiohttp.ClientSession(connector=connector, auto_decompress=False)

    async def _close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    # --- relaying --------------------------------------------------------------------------

    def _route_of(self, request: web.Request) -> tuple[Route | None, str]:
        """The route named by the request's token, and where the token was: `bearer`
        (`Authorization`), `x-api-key` (Anthropic), `x-goog-api-key` or `query` (Gemini)."""
        authorization = request.headers.get("Authorization", "")
        if authorization.lower().startswith("bearer "):
            token, style = authorization[7:].strip(), "bearer"
        elif "x-goog-api-key" in request.headers:
            token, style = request.headers["x-goog-api-key"].strip(), "x-goog-api-key"
        elif "x-api-key" in request.headers:
            token, style = request.headers["x-api-key"].strip(), "x-api-key"
        else:
            token, style = request.query.get(KEY_QUERY, "").strip(), "query"
        with self._lock:
            return self._routes.get(token), style

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        route, style = self._route_of(request)
        if route is None:
            return _error(401, "gateway_token_unknown", "unknown gateway token")
        if route.stats.failure == UNAVAILABLE:  # the attempt is lost already: hold no more
            return _error(503, UNAVAILABLE, route.stats.failure_message)
        if route.budget is not None and route.budget.reached is not None:
            route.stats.failure = JOB_LIMIT
            route.stats.failure_message = (
                f"the job reached its spend limit ({route.budget.describe()}): the attempt "
                "stopped at this model request"
            )
            return _error(403, JOB_LIMIT, route.stats.failure_message)
        body = await request.read()
        if route.replay is not None:
            answered = await self._replayed(request, route, route.replay, body)
            if answered is not None:  # None: a resumed attempt's reuse fell through
                return answered
        upstream = route.upstream
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        if upstream.api_key and style == "bearer":
            headers["Authorization"] = f"Bearer {upstream.api_key}"
        elif upstream.api_key and style != "query":
            headers[style] = upstream.api_key
        url = upstream.origin + _relayed_path(
            request, upstream.api_key if style == "query" else None
        )
        began = time.monotonic()
        model = path_model(request.path) or _requested_model(body) or ""
        limiter = self._concurrency.limiter(upstream.base_url, model)
        held = False
        try:
            while True:
                try:
                    return await self._limited(limiter, route, began, request, url, headers, body)
                except _Retry as retry:
                    if not held:
                        held = True
                        route.stats.waiting += 1
                    wait = await self._wait(route, retry, time.monotonic() - began)
                if wait is not None:
                    return wait
        finally:
            if held:
                route.stats.waiting -= 1

    async def _limited(
        self,
        limiter: Limiter,
        route: Route,
        began: float,
        request: web.Request,
        url: str,
        headers: dict[str, str],
        body: bytes,
    ) -> web.StreamResponse:
        """One try of the upstream within its concurrency limit; the wait for a place counts
        against the stall budget."""
        slot = await limiter.acquire(route.upstream.stall_seconds - (time.monotonic() - began))
        if slot is None:
            route.stats.failure = UNAVAILABLE
            route.stats.failure_message = (
                f"the model upstream {route.upstream.origin} held this request over its "
                f"concurrency limit past upstream_stall_seconds={route.upstream.stall_seconds:g}"
            )
            return _error(503, UNAVAILABLE, route.stats.failure_message)
        try:
            response = await self._forward(request, route, url, headers, body)
        except _Retry as retry:
            limiter.release(slot, "throttled" if retry.throttled else "failed", retry.retry_after)
            raise
        except BaseException:
            limiter.release(slot, "failed")
            raise
        limiter.release(slot, "ok")
        return response

    async def _replayed(
        self, request: web.Request, route: Route, replay: RoleReplay, body: bytes
    ) -> web.StreamResponse | None:
        """Answer from the recording (see `replaying`); no upstream is contacted. None when
        the recording does not answer and the replay falls through to the upstream."""
        found = replay.answer(request.method, request.path, body)
        if isinstance(found, ModelDivergence) and replay.falls_through:
            return None
        if isinstance(found, ModelDivergence):
            message = (
                f"model-traffic replay: request {found.index} of role {found.role} "
                f"diverged from the recording: {found.difference}"
            )
            return _error(409, found.code, message)
        reader = UsageReader()
        if found.streamed:
            data = found.stream_bytes()
            reader.feed_stream(data)
            relay = web.StreamResponse(
                status=found.status, headers={"Content-Type": "text/event-stream"}
            )
            await relay.prepare(request)
            for event in data.split(b"\n\n"):
                if event:
                    await relay.write(event + b"\n\n")
        else:
            data = found.body_bytes()
            with contextlib.suppress(ValueError):
                reader.feed_json(json.loads(data))
        if request.method == "POST":
            _count(route, reader, body, request.path)
        route.stats.reused += 1
        if route.recorder is not None:
            route.recorder.record(request.method, request.path, body, found.status, data)
        if found.streamed:
            with contextlib.suppress(ConnectionResetError):  # the agent hung up after the end
                await relay.write_eof()
            return relay
        return web.Response(
            status=found.status, body=data, headers={"Content-Type": "application/json"}
        )

    async def _wait(self, route: Route, retry: _Retry, elapsed: float) -> web.Response | None:
        """Sleep until the next try; past the stall budget, the answer to give instead."""
        upstream = route.upstream
        wait = max(RETRY_INTERVAL_SECONDS, retry.retry_after or 0.0)
        route.stats.failure_message = (
            f"the model upstream {upstream.origin} failed ({retry.reason}) and did not "
            f"recover within upstream_stall_seconds={upstream.stall_seconds:g} "
            f"({route.stats.retries} retries)"
        )
        if elapsed + wait > upstream.stall_seconds:
            route.stats.failure = UNAVAILABLE
            return _error(503, UNAVAILABLE, route.stats.failure_message)
        route.stats.retries += 1
        route.stats.wait_seconds += wait
        await asyncio.sleep(wait)
        return None

    async def _forward(
        self,
        request: web.Request,
        route: Route,
        url: str,
        headers: dict[str, str],
        body: bytes,
    ) -> web.StreamResponse:
        assert self._session is not None
        upstream = route.upstream
        timeout = aiohttp.ClientTimeout(
            total=upstream.timeout, sock_read=upstream.watchdog, sock_connect=upstream.timeout
        )
        try:
            response = await self._session.request(
                request.method, url, data=body, headers=headers, timeout=timeout
            )
        except (aiohttp.ClientError, TimeoutError) as exc:
            reason = _masked(f"{type(exc).__name__}: {exc}".rstrip(": "), upstream.api_key)
            raise _Retry(reason) from None
        async with response:
            if response.status == 429 or response.status >= 500:
                await response.read()
                retry_after = retry_after_seconds(response.headers.get("Retry-After"))
                throttled = response.status == 429
                raise _Retry(f"HTTP {response.status}", retry_after, throttled=throttled)
            reader = UsageReader()
            out_headers = {k: v for k, v in response.headers.items() if k.lower() not in HOP_BY_HOP}
            stream = response.content_type == "text/event-stream"
            if not stream:
                try:
                    data = await response.read()
                except (aiohttp.ClientError, TimeoutError) as exc:
                    raise _Retry(f"{type(exc).__name__} reading the response") from None
                with contextlib.suppress(ValueError):
                    reader.feed_json(json.loads(data))
                if request.method == "POST":
                    _count(route, reader, body, request.path)
                if route.recorder is not None:
                    route.recorder.record(request.method, request.path, body, response.status, data)
                return web.Response(status=response.status, body=data, headers=out_headers)
            relay = web.StreamResponse(status=response.status, headers=out_headers)
            await relay.prepare(request)
            try:
                async for piece in response.content.iter_any():
                    reader.feed_stream(piece)
                    await relay.write(piece)
            except (aiohttp.ClientError, TimeoutError) as exc:
                _count(route, reader, body, request.path)
                failure = f"the upstream stream broke or stalled mid-response: {exc!r}"
                if route.stats.failure is None:
                    route.stats.failure = STREAM_BROKEN
                    route.stats.failure_message = _masked(failure, upstream.api_key)
                raise ConnectionResetError("upstream stream broke") from None
            _count(route, reader, body, request.path)
            if route.recorder is not None:
                route.recorder.record(
                    request.method, request.path, body, response.status, reader.stream_bytes
                )
            with contextlib.suppress(ConnectionResetError):  # the agent hung up after the end
                await relay.write_eof()
            return relay


def _relayed_path(request: web.Request, real_key: str | None) -> str:
    """The request's path and query as relayed: a `key=` query (the route's token) becomes
    the real key, or goes when there is none."""
    if KEY_QUERY not in request.query:
        return request.path_qs
    query = [(name, value) for name, value in request.query.items() if name != KEY_QUERY]
    if real_key:
        query.append((KEY_QUERY, real_key))
    return request.path + ("?" + urlencode(query) if query else "")


def _masked(text: str, key: str | None) -> str:
    """`text` without `key` (a relayed URL's query can carry it into an error's text)."""
    return text.replace(key, "***") if key else text


def _count(route: Route, reader: UsageReader, body: bytes, path: str, *, paid: bool = True) -> None:
    """Add a response's usage to its route, and to the job's spend when the upstream was
    `paid` for it (not for an answer from a recording); the model is the response's, else the
    one the request names (in its path for Gemini; its body, an agent's whole conversation
    often, is parsed only then). A token count is a request with no tokens or cost of its own
    (its answer has no usage)."""
    if is_token_count(path):
        route.stats.requests += 1
        return
    usage = reader.usage()
    model = None
    if usage is None or not usage.model:
        model = path_model(path) or _requested_model(body)
    route.stats.add(usage, model)
    if route.budget is not None:
        if usage is None:
            route.budget.add(0, 0, None)
        else:
            cost = priced_cost(usage, usage.model or model)
            route.budget.add(usage.prompt_tokens, usage.completion_tokens, cost)


def _requested_model(body: bytes) -> str | None:
    try:
        value = json.loads(body) if body else None
    except ValueError:
        return None
    model = value.get("model") if isinstance(value, dict) else None
    return model if isinstance(model, str) else None


def _error(status: int, code: str, message: str) -> web.Response:
    document = {"error": {"message": message, "type": "ageval_gateway", "code": code}}
    return web.Response(status=status, text=json.dumps(document), content_type="application/json")


# --- one gateway per process while runs need it ---------------------------------------------

_shared: Gateway | None = None
_users = 0
_shared_lock = threading.Lock()


def gateway_host() -> str:
    """Where the gateway listens: the Docker bridge gateway (attempt containers reach it as
    `host.docker.internal`), loopback when there is no engine."""
    from agevalx.agents.mockllm import bridge_gateway

    return bridge_gateway()


@contextlib.contextmanager
def shared_gateway() -> Iterator[Gateway]:
    """The process's gateway, started by the first user and stopped by the last."""
    global _shared, _users
    with _shared_lock:
        if _shared is None:
            _shared = Gateway(host=gateway_host()).start()
        _users += 1
        gateway = _shared
    try:
        yield gateway
    finally:
        with _shared_lock:
            _users -= 1
            if _users == 0 and _shared is not None:
                _shared.stop()
                _shared = None


def concurrency_line() -> str:
    """The process's gateway's concurrency line (empty when no gateway runs)."""
    gateway = _shared
    return gateway.concurrency_line() if gateway is not None else ""
