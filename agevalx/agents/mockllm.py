"""A scripted model server, for tests and development without a model.

`MockLLM` serves every model API the bundled agents speak, each at its usual path: the routes
of the modules in `agevalx.agents.mockapis` (OpenAI chat completions and responses, Anthropic
messages, Gemini's generateContent), streamed or not as the request asks, and
`GET /v1/models`. Each request of a *scripted* route (a model turn) gets the next reply of the
one script, in order, whatever its API:

```python
script = [
    {"tool_call": {"name": "bash", "arguments": {"command": "echo hi > hi.txt"}}},
    {"message": "Done."},
]
```

A reply is `{"message": TEXT}`, `{"tool_call": CALL}` or `{"tool_calls": [CALL, ...]}` where
a call is `{"name": ..., "arguments": {...}, "id": optional}`; `message` may accompany tool
calls. Once the script is spent, every request gets `EXHAUSTED_TEXT`. Every request is kept
in `requests` (path, JSON body, the `Authorization` header) for the test to inspect.

An API module defines `ROUTES`, a tuple of `ApiRoute`: a method, a path predicate, whether
the route consumes the script, and `respond(MockRequest) -> MockResponse`.

Per conversation (`per_conversation=True`): instead of one script for the whole server, every
conversation gets the script from its start: a request's reply is the script step numbered by
the assistant turns its conversation already holds (the `messages`, `input` or `contents` it
carries), so many attempts can share one server in any order. Past the script's end, the last
step repeats. `{{run}}` in a reply's text or tool-call arguments is replaced by the text after
`RUN: ` on its line in the conversation's first user message.

Faults (`faults=[...]`, for long-run tests), placed by the number of model turns received so
far (0-based, failed ones included):

- `{"kind": "stall", "at": [n, ...], "seconds": S}`: the reply to turn n starts, then stops
  for S seconds mid-response and the connection is closed without the rest;
- `{"kind": "429" | "503", "start": n, "count": c, "retry_after": s}`: turns n to n+c-1 are
  refused with that status (and `Retry-After: s` when given).

`faults_served` counts the faults served by kind; `billed_tokens` sums the tokens of every
reply that was sent, whole or cut (what a provider would bill).

Failure modes, for the gateway's stall handling: the first `failures` completion requests are
answered with `failure_status` (503 by default; 429 with `retry_after` as `Retry-After`),
after `failure_delay` seconds each, before the script is served (`failures=-1`: never
recovers). `cost` adds a provider-reported `usage.cost` (USD) to every reply.

The server binds only a loopback address or the Docker bridge gateway (`bridge_gateway()`),
the host's own address on the bridge: attempt containers reach it as
`host.docker.internal`, and nothing outside this machine does.
"""

from __future__ import annotations

import dataclasses
import importlib
import ipaddress
import json
import pkgutil
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

EXHAUSTED_TEXT = "(the mock model's script is spent)"
"""What the server answers once every scripted reply has been served."""

DEFAULT_BRIDGE_GATEWAY = "172.17.0.1"
"""The gateway of Docker's default `bridge` network when the engine does not say."""

MAX_BODY_BYTES = 64 * 1024 * 1024
"""Largest request body read."""

ARGUMENT_PIECE = 24
"""Characters of tool-call arguments per streamed chunk (exercises the client's joining)."""


class MockLLMError(Exception):
    """A script, a fault list or an address the server refuses."""


FAULT_KINDS = ("stall", "429", "503")
"""The kinds of fault `MockLLM(faults=...)` serves."""


@dataclass(frozen=True)
class Fault:
    """One scripted fault: `kind`, and the model turns (0-based) it hits."""

    kind: str
    turns: frozenset[int]
    seconds: float = 0.0
    """For a stall: how long the response stops."""
    retry_after: float | None = None
    """For a 429 or 503: the Retry-After header's seconds."""


def parse_faults(faults: Sequence[Mapping[str, Any]]) -> list[Fault]:
    """Validate a fault list (see the module docstring)."""
    parsed: list[Fault] = []
    for number, fault in enumerate(faults):
        if not isinstance(fault, Mapping):
            raise MockLLMError(f"fault {number} is not a mapping")
        kind = str(fault.get("kind"))
        if kind not in FAULT_KINDS:
            raise MockLLMError(f"fault {number}: kind must be one of {', '.join(FAULT_KINDS)}")
        if kind == "stall":
            _only(number, fault, {"kind", "at", "seconds"})
            at = fault.get("at")
            if not isinstance(at, list) or not at or not all(_count(t) for t in at):
                raise MockLLMError(f"fault {number}: at must be a list of turn numbers (>= 0)")
            seconds = _seconds(number, fault.get("seconds"), "seconds")
            parsed.append(Fault(kind, frozenset(at), seconds=seconds))
            continue
        _only(number, fault, {"kind", "start", "count", "retry_after"})
        start, count = fault.get("start"), fault.get("count")
        if not isinstance(start, int) or not isinstance(count, int):
            raise MockLLMError(f"fault {number}: start (>= 0) and count (> 0) must be integers")
        if not _count(start) or not _count(count) or count == 0:
            raise MockLLMError(f"fault {number}: start (>= 0) and count (> 0) must be integers")
        retry = fault.get("retry_after")
        retry_after = None if retry is None else _seconds(number, retry, "retry_after")
        parsed.append(Fault(kind, frozenset(range(start, start + count)), retry_after=retry_after))
    return parsed


def _only(number: int, fault: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = set(fault) - allowed
    if unknown:
        raise MockLLMError(f"fault {number} has unknown keys {sorted(unknown)}")


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _seconds(number: int, value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 3600:
        raise MockLLMError(f"fault {number}: {name} must be seconds between 0 and 3600")
    return float(value)


def bridge_gateway() -> str:
    """The gateway address of Docker's `bridge` network (the host's side of it)."""
    try:
        import docker

        network = docker.from_env().networks.get("bridge")
        for config in network.attrs.get("IPAM", {}).get("Config") or []:
            gateway = config.get("Gateway")
            if gateway:
                return str(ipaddress.ip_address(gateway))
    except Exception:  # no engine, no bridge network: fall back to Docker's default
        pass
    return DEFAULT_BRIDGE_GATEWAY


def check_bind_address(host: str) -> str:
    """`host` if it is a loopback address or the bridge gateway; `MockLLMError` otherwise."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise MockLLMError(f"bind address {host!r} is not an IP address") from None
    if address.is_loopback or str(address) == bridge_gateway():
        return str(address)
    raise MockLLMError(
        f"refusing to bind {host}: only loopback addresses and the Docker bridge gateway "
        f"({bridge_gateway()}) are allowed"
    )


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asks for."""

    name: str
    arguments: Mapping[str, Any]
    id: str


@dataclass(frozen=True)
class Reply:
    """One scripted model turn."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True)
class ReceivedRequest:
    """A request the server got."""

    method: str
    path: str
    body: Any
    authorization: str | None
    time: float = field(default_factory=time.time)
    peer: tuple[str, int] | None = None
    """The client's address and port: requests on one kept-alive connection share it."""


@dataclass(frozen=True)
class MockRequest:
    """What an API route answers: the request, and the scripted reply it is given."""

    method: str
    path: str
    """The path without its query."""
    query: Mapping[str, list[str]]
    body: Any
    headers: Mapping[str, str]
    reply: Reply | None
    """The next scripted reply, for a scripted route; None otherwise."""
    model: str
    """The requested model (`body["model"]`), else the server's default."""
    cost: float | None
    """A provider cost (USD) to report with the usage, if any."""


@dataclass(frozen=True)
class MockResponse:
    """An API route's answer: a JSON body, or server-sent events."""

    status: int = 200
    json: Any = None
    events: Sequence[tuple[str | None, Any]] = ()
    """(event name or None, data) pairs, sent as server-sent events when `stream`."""
    stream: bool = False
    done: bool = False
    """End the event stream with `data: [DONE]` (OpenAI's convention)."""


@dataclass(frozen=True)
class ApiRoute:
    """One endpoint of a model API."""

    name: str
    method: str
    matches: Callable[[str], bool]
    """Whether the route serves a path (its query removed)."""
    scripted: bool
    """Whether a request consumes the next scripted reply (a model turn)."""
    respond: Callable[[MockRequest], MockResponse]
    turn: Callable[[Any], bool] | None = None
    """For a scripted route, which request bodies are model turns (None: every one); the
    others are the agent's side requests (a title, a quota probe) and get no reply."""

    def consumes(self, body: Any) -> bool:
        """Whether a request with `body` takes the next scripted reply."""
        return self.scripted and (self.turn is None or self.turn(body))


def api_routes() -> tuple[ApiRoute, ...]:
    """The routes of every module in `agevalx.agents.mockapis`, in module-name order."""
    from agevalx.agents import mockapis

    routes: list[ApiRoute] = []
    for info in sorted(pkgutil.iter_modules(mockapis.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{mockapis.__name__}.{info.name}")
        routes.extend(getattr(module, "ROUTES", ()))
    return tuple(routes)


def route_for(routes: Sequence[ApiRoute], method: str, path: str) -> ApiRoute | None:
    """The first route serving `method` `path`."""
    return next((r for r in routes if r.method == method and r.matches(path)), None)


def parse_script(script: Sequence[Mapping[str, Any]]) -> list[Reply]:
    """Validate a script (see the module docstring) into replies."""
    replies: list[Reply] = []
    for number, step in enumerate(script):
        if not isinstance(step, Mapping) or not step:
            raise MockLLMError(f"script step {number} is not a non-empty mapping")
        unknown = set(step) - {"message", "tool_call", "tool_calls"}
        if unknown:
            raise MockLLMError(f"script step {number} has unknown keys {sorted(unknown)}")
        calls = list(step.get("tool_calls") or [])
        if "tool_call" in step:
            calls.append(step["tool_call"])
        text = step.get("message", "")
        if not isinstance(text, str):
            raise MockLLMError(f"script step {number}: message must be a string")
        parsed = tuple(_tool_call(number, index, call) for index, call in enumerate(calls))
        replies.append(Reply(text=text, tool_calls=parsed))
    return replies


def _tool_call(step: int, index: int, call: Any) -> ToolCall:
    if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
        raise MockLLMError(f"script step {step}: tool call {index} needs a string name")
    arguments = call.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        raise MockLLMError(f"script step {step}: tool call arguments must be a mapping")
    return ToolCall(
        name=call["name"],
        arguments=dict(arguments),
        id=str(call.get("id") or f"call_{step}_{index}"),
    )


class MockLLM:
    """The server; use it as a context manager (`with MockLLM(script) as llm: llm.url`)."""

    def __init__(
        self,
        script: Sequence[Mapping[str, Any]],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        model: str = "mock-model",
        failures: int = 0,
        failure_status: int = 503,
        retry_after: str | None = None,
        failure_delay: float = 0.0,
        cost: float | None = None,
        per_conversation: bool = False,
        faults: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self._replies = parse_script(script)
        if per_conversation and not self._replies:
            raise MockLLMError("a per-conversation script needs at least one reply")
        self.per_conversation = per_conversation
        self._faults = parse_faults(faults)
        self._turns = 0
        self.faults_served: dict[str, int] = {}
        """Faults served so far, by kind."""
        self.billed_tokens = 0
        """Tokens of every reply sent, whole or cut."""
        self._failures = failures
        self.failure_status = failure_status
        self.retry_after = retry_after
        self.failure_delay = failure_delay
        self.cost = cost
        self._host = check_bind_address(host)
        self._port = port
        self._model = model
        self._lock = threading.Lock()
        self._served = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.routes = api_routes()
        self.requests: list[ReceivedRequest] = []
        """Every request received, in order."""

    @property
    def host(self) -> str:
        return self._host

    @property
    def port(self) -> int:
        """The bound port (once started)."""
        if self._server is None:
            raise MockLLMError("the server is not running")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """`http://<host>:<port>/v1`, the base URL a client is given."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self.port}/v1"

    @property
    def completions(self) -> list[ReceivedRequest]:
        """The model turns received: the requests of scripted routes, whatever their API."""
        return [r for r in self.requests if self._scripted(r)]

    def _scripted(self, request: ReceivedRequest) -> bool:
        route = route_for(self.routes, request.method, urlsplit(request.path).path)
        return route is not None and route.consumes(request.body)

    @property
    def remaining(self) -> int:
        """Scripted replies not served yet."""
        with self._lock:
            return len(self._replies) - self._served

    def start(self) -> MockLLM:
        handler = _handler_class(self)
        self._server = ThreadingHTTPServer((self._host, self._port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="ageval.mockllm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def __enter__(self) -> MockLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- used by the handler ---------------------------------------------------------------

    def _record(self, request: ReceivedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _should_fail(self) -> bool:
        with self._lock:
            if self._failures == 0:
                return False
            if self._failures > 0:
                self._failures -= 1
            return True

    def add_faults(self, faults: Sequence[Mapping[str, Any]]) -> None:
        """More faults, their turn numbers counted from the next turn the server receives
        (for a fault that must meet whoever sends the next requests)."""
        parsed = parse_faults(faults)
        with self._lock:
            now = self._turns
            self._faults += [
                dataclasses.replace(f, turns=frozenset(now + t for t in f.turns)) for f in parsed
            ]

    def _fault(self) -> Fault | None:
        """The fault this model turn meets, if any (counting the turn)."""
        with self._lock:
            turn = self._turns
            self._turns += 1
            fault = next((f for f in self._faults if turn in f.turns), None)
            if fault is not None:
                self.faults_served[fault.kind] = self.faults_served.get(fault.kind, 0) + 1
            return fault

    def _bill(self, reply: Reply) -> None:
        with self._lock:
            self.billed_tokens += int(usage_of(reply)["total_tokens"])

    def _reply_for(self, body: Any) -> Reply:
        """The reply to a model turn: the next of the script, or, per conversation, the step
        its conversation has reached."""
        if not self.per_conversation:
            return self._next_reply()
        step = self._replies[min(assistant_turns(body), len(self._replies) - 1)]
        run = run_line(body)
        return step if run is None else _with_run(step, run)

    def _next_reply(self) -> Reply:
        with self._lock:
            if self._served < len(self._replies):
                reply = self._replies[self._served]
                self._served += 1
                return reply
        return Reply(text=EXHAUSTED_TEXT)

    def _model_id(self, body: Any) -> str:
        requested = body.get("model") if isinstance(body, dict) else None
        return requested if isinstance(requested, str) else self._model


def _handler_class(server: MockLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        mock = server

    return Handler


class _Handler(BaseHTTPRequestHandler):
    mock: MockLLM
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    """Headers and body go out as two writes: without this, a kept-alive client waits out
    a delayed ACK (~40 ms) on every reply."""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read `MockLLM.requests` instead."""

    def do_GET(self) -> None:
        self.mock._record(
            ReceivedRequest("GET", self.path, None, self._authorization(), peer=self._peer())
        )
        if self._routed("GET", None):
            return
        if urlsplit(self.path).path.rstrip("/").endswith("/models"):
            listing = {"object": "list", "data": [{"id": self.mock._model, "object": "model"}]}
            self._send_json(HTTPStatus.OK, listing)
        else:
            self._send_json(HTTPStatus.NOT_FOUND, _error("not found"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self._send_json(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, _error("body too large"))
            return
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        self.mock._record(
            ReceivedRequest("POST", self.path, body, self._authorization(), peer=self._peer())
        )
        if not self._routed("POST", body):
            self._send_json(HTTPStatus.NOT_FOUND, _error("not found"))

    def _routed(self, method: str, body: Any) -> bool:
        """Answer through the API route serving this request; False when none does."""
        parts = urlsplit(self.path)
        route = route_for(self.mock.routes, method, parts.path)
        if route is None:
            return False
        if method == "POST" and not isinstance(body, dict):
            self._send_json(HTTPStatus.BAD_REQUEST, _error("the body is not a JSON object"))
            return True
        scripted = route.consumes(body)
        fault = self.mock._fault() if scripted else None
        if fault is not None and fault.kind != "stall":
            headers = (
                {} if fault.retry_after is None else {"Retry-After": _header(fault.retry_after)}
            )
            message = f"the mock upstream is refusing (fault {fault.kind})"
            self._send_json(HTTPStatus(int(fault.kind)), _error(message), headers)
            return True
        if scripted and self.mock._should_fail():
            time.sleep(self.mock.failure_delay)
            retry_after = self.mock.retry_after
            headers = {} if retry_after is None else {"Retry-After": retry_after}
            status = HTTPStatus(self.mock.failure_status)
            self._send_json(status, _error("the mock upstream is failing"), headers)
            return True
        request = MockRequest(
            method=method,
            path=parts.path,
            query=parse_qs(parts.query),
            body=body,
            headers={name.lower(): value for name, value in self.headers.items()},
            reply=self.mock._reply_for(body) if scripted else None,
            model=self.mock._model_id(body),
            cost=self.mock.cost,
        )
        response = route.respond(request)
        if request.reply is not None:
            self.mock._bill(request.reply)
        stall = fault.seconds if fault is not None else None
        if response.stream:
            self._send_events(response.events, done=response.done, stall=stall)
        elif stall is not None:
            self._send_stalled_json(HTTPStatus(response.status), response.json, stall)
        else:
            self._send_json(HTTPStatus(response.status), response.json)
        return True

    def _authorization(self) -> str | None:
        return self.headers.get("Authorization")

    def _peer(self) -> tuple[str, int]:
        return str(self.client_address[0]), int(self.client_address[1])

    def _send_json(
        self, status: HTTPStatus, value: Any, headers: Mapping[str, str] | None = None
    ) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        for name, header in (headers or {}).items():
            self.send_header(name, header)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_stalled_json(self, status: HTTPStatus, value: Any, seconds: float) -> None:
        """Half of a JSON answer, a stop of `seconds`, then the connection closed."""
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.close_connection = True
        try:
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            time.sleep(seconds)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _send_events(
        self, events: Sequence[tuple[str | None, Any]], *, done: bool, stall: float | None = None
    ) -> None:
        """Server-sent events in HTTP/1.1 chunks, one event a chunk; the connection is kept
        alive for the next request, as a provider's is. With `stall`, half the events are
        sent, then nothing for `stall` seconds, then the connection is closed."""
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            cut = max(1, len(events) // 2) if stall is not None else None
            for number, (name, data) in enumerate(events):
                if number == cut:
                    time.sleep(stall or 0.0)
                    self.close_connection = True
                    return
                head = b"" if name is None else b"event: " + name.encode() + b"\n"
                self._write_chunk(head + b"data: " + json.dumps(data).encode() + b"\n\n")
            if done:
                self._write_chunk(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


def _header(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() else str(seconds)


RUN_PREFIX = "RUN: "
"""Where `{{run}}` comes from: the rest of this line in the first user message."""

ASSISTANT_ROLES = frozenset({"assistant", "model"})
ASSISTANT_ITEMS = frozenset({"function_call", "custom_tool_call", "reasoning"})
"""Responses-API input items the model produced (a turn may hold several)."""


def _conversation(body: Any) -> list[Any]:
    if not isinstance(body, Mapping):
        return []
    for key in ("messages", "input", "contents"):
        items = body.get(key)
        if isinstance(items, list):
            return items
    return []


def _from_assistant(item: Any) -> bool:
    if not isinstance(item, Mapping):
        return False
    return item.get("role") in ASSISTANT_ROLES or item.get("type") in ASSISTANT_ITEMS


def assistant_turns(body: Any) -> int:
    """The model turns a request's conversation already holds: runs of consecutive items the
    model produced, in any of the APIs' shapes."""
    turns, previous = 0, False
    for item in _conversation(body):
        current = _from_assistant(item)
        turns += current and not previous
        previous = current
    return turns


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text(part) for part in content)
    if isinstance(content, Mapping):
        for key in ("text", "content", "parts"):
            if key in content:
                return _text(content[key])
    return ""


def run_line(body: Any) -> str | None:
    """The text after `RUN: ` on its line in the conversation's first user message."""
    first = next(
        (
            item
            for item in _conversation(body)
            if isinstance(item, Mapping) and item.get("role") == "user"
        ),
        None,
    )
    if first is None:
        return None
    text = _text(first.get("content", first.get("parts")))
    for line in text.splitlines():
        at = line.find(RUN_PREFIX)
        if at >= 0:
            return line[at + len(RUN_PREFIX) :].strip()
    return None


def _substituted(value: Any, run: str) -> Any:
    if isinstance(value, str):
        return value.replace("{{run}}", run)
    if isinstance(value, Mapping):
        return {key: _substituted(item, run) for key, item in value.items()}
    if isinstance(value, list):
        return [_substituted(item, run) for item in value]
    return value


def _with_run(reply: Reply, run: str) -> Reply:
    calls = tuple(
        ToolCall(call.name, _substituted(dict(call.arguments), run), call.id)
        for call in reply.tool_calls
    )
    return Reply(text=reply.text.replace("{{run}}", run), tool_calls=calls)


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error"}}


PROMPT_TOKENS = 10
"""Prompt tokens the mock reports for every request."""


def usage_of(reply: Reply, cost: float | None = None) -> dict[str, Any]:
    """The usage the mock reports for `reply`."""
    completion_tokens = max(1, len(reply.text.split()) + 8 * len(reply.tool_calls))
    usage: dict[str, Any] = {
        "prompt_tokens": PROMPT_TOKENS,
        "completion_tokens": completion_tokens,
        "total_tokens": PROMPT_TOKENS + completion_tokens,
    }
    if cost is not None:
        usage["cost"] = cost
    return usage


def _finish_reason(reply: Reply) -> str:
    return "tool_calls" if reply.tool_calls else "stop"


def completion(reply: Reply, model: str, cost: float | None = None) -> dict[str, Any]:
    """A non-streamed `chat.completion` object for `reply`."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in reply.tool_calls
        ]
    return {
        "id": "chatcmpl-mock",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(reply)}],
        "usage": usage_of(reply, cost),
    }


def stream_chunks(
    reply: Reply, model: str, *, include_usage: bool = False, cost: float | None = None
) -> Iterator[dict[str, Any]]:
    """The `chat.completion.chunk` objects of a streamed `reply` (without `[DONE]`)."""
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-mock",
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    yield chunk({"role": "assistant", "content": ""})
    words = reply.text.split(" ") if reply.text else []
    for position, word in enumerate(words):
        yield chunk({"content": word if position == 0 else " " + word})
    for index, call in enumerate(reply.tool_calls):
        head = {"index": index, "id": call.id, "type": "function"}
        yield chunk({"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]})
        arguments = json.dumps(call.arguments)
        for start in range(0, len(arguments), ARGUMENT_PIECE):
            piece = arguments[start : start + ARGUMENT_PIECE]
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _finish_reason(reply))
    if include_usage:
        yield {
            "id": "chatcmpl-mock",
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [],
            "usage": usage_of(reply, cost),
        }
