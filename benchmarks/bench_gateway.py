"""Gateway benchmark: the overhead the model gateway adds per request, p50 and p99, against a
direct connection to the mock model server on loopback. Goal: under 2 ms at p50.

    .venv/bin/python benchmarks/bench_gateway.py [--requests 500] [--stream]

Both paths use one kept-alive HTTP/1.1 connection from the client (`http.client`); the gateway
keeps its own pooled connection to the mock. The figures are per-request wall times.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import time
from urllib.parse import urlsplit

from agevalx.agents.mockllm import MockLLM
from agevalx.gateway import Gateway, Upstream


def _timings(url: str, token: str, body: bytes, count: int) -> list[float]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    path = parts.path + "/chat/completions"
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        response.read()
        samples.append(time.perf_counter() - started)
        if response.status != 200:
            raise SystemExit(f"HTTP {response.status} from {url}")
        if response.getheader("Connection", "").lower() == "close":
            connection.close()
            connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    connection.close()
    return samples


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--stream", action="store_true", help="streamed completions")
    args = parser.parse_args()
    body = json.dumps({"model": "mock-model", "stream": args.stream, "messages": []}).encode()
    script = [{"message": "ok"}] * (2 * args.requests + 100)
    with MockLLM(script) as mock, Gateway() as gateway:
        route = gateway.register(Upstream(base_url=mock.url, api_key="sk-bench"))
        via = gateway.base_url(route)
        _timings(mock.url, "sk-bench", body, 50)  # warm up both paths
        _timings(via, route.token, body, 50)
        direct = _timings(mock.url, "sk-bench", body, args.requests)
        gated = _timings(via, route.token, body, args.requests)
    print(f"{args.requests} requests each ({'streamed' if args.stream else 'plain'}):")
    for name, samples in (("direct", direct), ("gateway", gated)):
        p50, p99 = _percentile(samples, 0.5), _percentile(samples, 0.99)
        print(f"  {name:8} p50 {p50 * 1e3:7.3f} ms   p99 {p99 * 1e3:7.3f} ms")
    overhead_p50 = (_percentile(gated, 0.5) - _percentile(direct, 0.5)) * 1e3
    overhead_p99 = (_percentile(gated, 0.99) - _percentile(direct, 0.99)) * 1e3
    mean = (statistics.fmean(gated) - statistics.fmean(direct)) * 1e3
    verdict = "meets" if overhead_p50 < 2.0 else "misses"
    print(
        f"  overhead p50 {overhead_p50:.3f} ms, p99 {overhead_p99:.3f} ms, mean {mean:.3f} ms "
        f"({verdict} the 2 ms p50 goal)"
    )


if __name__ == "__main__":
    main()
