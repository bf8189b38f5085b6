"""Gateway benchmark: the overhead the model gateway adds per request, p50 and p99, against a
direct connection to the mock model server on loopback. Goal: under 2 ms at p50.

    .venv/bin/python benchmarks/bench_gateway.py [--requests 1000] [--stream] [--api API]

API is the model API the requests speak (each agent of the catalog speaks one: `ageval
agents`): `openai-chat` (default), `openai-responses`, `anthropic-messages`, `gemini`.

Equal conditions for both paths: the client, the gateway and the mock each run in a process
of their own, as the agent (in its container), ageval and the provider do. The mock streams
in HTTP/1.1 chunks and keeps its connections alive; the client keeps one HTTP/1.1 connection
per path (`http.client`) and alternates the paths request by request, so that load from
anything else on the machine falls on both alike; the gateway keeps its own pooled
connection to the mock. The figures are per-request wall times until the whole response is
read.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import time
from urllib.parse import urlsplit

SERVE_GATEWAY = """
import sys
from agevalx.gateway.routes import Upstream
from agevalx.gateway.server import Gateway
gateway = Gateway().start()
route = gateway.register(Upstream(base_url=sys.argv[1], api_key="sk-bench"))
print(gateway.base_url(route), route.token, flush=True)
sys.stdin.read()
gateway.stop()
"""
SERVE_MOCK = """
import sys, threading
from agevalx.agents.mockllm import MockLLM
mock = MockLLM([{"message": "ok, here is a short answer"}] * int(sys.argv[1])).start()
print(mock.port, flush=True)
sys.stdin.read()
mock.stop()
"""


def api_request(api: str, stream: bool, token: str) -> tuple[str, dict[str, str], bytes]:
    """The path, headers and body of one model request in `api`, credentials `token`."""
    json_type = {"Content-Type": "application/json"}
    bearer = {**json_type, "Authorization": f"Bearer {token}"}
    user = [{"role": "user", "content": "hi"}]
    if api == "openai-chat":
        body: dict[str, object] = {"model": "mock-model", "stream": stream, "messages": user}
        return "/v1/chat/completions", bearer, json.dumps(body).encode()
    if api == "openai-responses":
        body = {"model": "mock-model", "stream": stream, "input": "hi"}
        return "/v1/responses", bearer, json.dumps(body).encode()
    if api == "anthropic-messages":
        body = {"model": "mock-model", "stream": stream, "max_tokens": 64, "messages": user}
        headers = {**json_type, "x-api-key": token, "anthropic-version": "2023-06-01"}
        return "/v1/messages", headers, json.dumps(body).encode()
    if api == "gemini":
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
        headers = {**json_type, "x-goog-api-key": token}
        return f"/v1beta/models/mock-model:{method}", headers, json.dumps(body).encode()
    raise SystemExit(f"unknown --api {api!r}")


class Path_:
    """One kept-alive client connection to `url` with the credentials `token`."""

    def __init__(self, url: str, token: str, api: str, stream: bool) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "", parts.port
        self.path, self.headers, self.body = api_request(api, stream, token)
        self.connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        self.samples: list[float] = []
        self.reconnects = 0

    def once(self, keep: bool = True) -> None:
        started = time.perf_counter()
        self.connection.request("POST", self.path, body=self.body, headers=self.headers)
        response = self.connection.getresponse()
        response.read()
        took = time.perf_counter() - started
        if response.status != 200:
            raise SystemExit(f"HTTP {response.status} from {self.host}:{self.port}")
        if keep:
            self.samples.append(took)
        if response.getheader("Connection", "").lower() == "close":
            self.reconnects += 1
            self.connection.close()
            self.connection = http.client.HTTPConnection(self.host, self.port, timeout=30)

    def close(self) -> None:
        self.connection.close()


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _serve(servers: list[subprocess.Popen[str]], script: str, argument: str) -> list[str]:
    """Start `script` in a process of its own; the words of the line it prints when ready."""
    server = subprocess.Popen(
        [sys.executable, "-c", script, argument],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    servers.append(server)
    assert server.stdout is not None
    return server.stdout.readline().split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--stream", action="store_true", help="streamed completions")
    parser.add_argument("--api", default="openai-chat", help="the model API spoken")
    args = parser.parse_args()
    replies = 2 * args.requests + 200
    servers: list[subprocess.Popen[str]] = []
    try:
        (port,) = _serve(servers, SERVE_MOCK, str(replies))
        url = f"http://127.0.0.1:{port}/v1"
        via, token = _serve(servers, SERVE_GATEWAY, url)
        direct = Path_(url, "sk-bench", args.api, args.stream)
        gated = Path_(via, token, args.api, args.stream)
        for _ in range(50):  # warm up both paths
            direct.once(keep=False)
            gated.once(keep=False)
        for _ in range(args.requests):
            direct.once()
            gated.once()
        direct.close()
        gated.close()
    finally:
        for server in servers:
            if server.stdin is not None:
                server.stdin.close()
            server.wait(10)
    kind = "streamed" if args.stream else "plain"
    print(f"{args.requests} {args.api} requests each ({kind}), alternated:")
    for name, path in (("direct", direct), ("gateway", gated)):
        p50, p99 = _percentile(path.samples, 0.5), _percentile(path.samples, 0.99)
        print(
            f"  {name:8} p50 {p50 * 1e3:7.3f} ms   p99 {p99 * 1e3:7.3f} ms"
            f"   ({path.reconnects} reconnects)"
        )
    overhead_p50 = (_percentile(gated.samples, 0.5) - _percentile(direct.samples, 0.5)) * 1e3
    overhead_p99 = (_percentile(gated.samples, 0.99) - _percentile(direct.samples, 0.99)) * 1e3
    mean = (statistics.fmean(gated.samples) - statistics.fmean(direct.samples)) * 1e3
    verdict = "meets" if overhead_p50 < 2.0 else "misses"
    print(
        f"  overhead p50 {overhead_p50:.3f} ms, p99 {overhead_p99:.3f} ms, mean {mean:.3f} ms "
        f"({verdict} the 2 ms p50 goal)"
    )


if __name__ == "__main__":
    main()
