"""Agents benchmark: what each agent of the catalog costs, against the scripted agent.

    .venv/bin/python benchmarks/bench_agents.py [--agents pi,claude-code] [--runs 3]
        [--rebuild] [--gateway-requests 300] [--json]

For each agent (default: every agent of the catalog):

- **bundle**: build time and size. The figures of the build this machine made (the bundle's
  marker), or, with `--rebuild`, of a fresh build into a temporary folder timed here (npm and
  PyPI downloads included: a network-bound figure).
- **first attempt**: `--runs` fresh attempts (`ageval run --fresh`, one process each) of
  harbor-demo's `hello` with the agent (`--agent NAME --model PROVIDER/MODEL`) against the
  scripted mock model (`examples/mock-model/hello-<agent>.yaml`), beside as many of the
  scripted ACP agent (no model) on the same task. Reported: the median run stage
  (`result.json` `seconds.run`: bundle mount check, configuration, agent start, its turns,
  checkpoint), its overhead over the scripted agent's, and the median time from the agent's
  launch (`agent_setup.ready_at` in its transcript) to its first model request (the mock's
  clock): the agent's own start-up.
- **gateway**: the model gateway's p50 overhead per request in the agent's API
  (`bench_gateway.py --api`, streamed), against a direct connection to the mock.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agevalx.agents import bundles, catalog  # noqa: E402
from agevalx.agents.catalog.base import provider_named  # noqa: E402
from agevalx.agents.mockllm import MockLLM  # noqa: E402

HARBOR_DEMO = ROOT / "examples" / "datasets" / "harbor-demo"
SCRIPTS = ROOT / "examples" / "mock-model"
SCRIPTED_PROFILES = ROOT / "examples" / "profiles" / "scripted.yaml"
MODELS = {
    "openai": "openai/gpt-5.4-mini",
    "anthropic": "anthropic/claude-sonnet-4-5",
    "gemini": "gemini/gemini-2.5-pro",
}
PATHS = {"openai-chat": "/v1", "openai-responses": "/v1"}


def _ageval(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "agevalx", *args, "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )
    try:
        return dict(json.loads(done.stdout))
    except ValueError:
        raise SystemExit(f"ageval {' '.join(args)} said: {done.stdout}{done.stderr}") from None


def _attempt(dataset: Path, binding: list[str], env: dict[str, str]) -> dict[str, Any]:
    document = _ageval("run", str(dataset), "--task", "hello", "--fresh", *binding, env=env)
    results = document.get("results") or []
    if not results or results[0]["status"] != "PASS":
        raise SystemExit(f"the attempt did not pass: {json.dumps(document)[:2000]}")
    return dict(results[0])


def _ready_at(dataset: Path, attempt_id: str) -> float | None:
    transcript = dataset / ".ageval" / "runs" / attempt_id / "transcript.jsonl"
    for line in transcript.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("type") == "agent_setup":
            return float(entry["ready_at"])
    return None


def _build_figures(name: str, rebuild: bool) -> dict[str, Any]:
    if rebuild:
        with tempfile.TemporaryDirectory(prefix="ageval-bench-bundles-") as folder:
            previous = os.environ.get(bundles.BUNDLES_ENV)
            os.environ[bundles.BUNDLES_ENV] = folder
            try:
                started = time.monotonic()
                bundle = bundles.ensure_bundle(name)
                seconds = time.monotonic() - started
            finally:
                if previous is None:
                    os.environ.pop(bundles.BUNDLES_ENV, None)
                else:
                    os.environ[bundles.BUNDLES_ENV] = previous
            return {"seconds": round(seconds, 1), "bytes": bundle.info["bytes"], "fresh": True}
    bundle = bundles.ensure_bundle(name)
    info = bundle.info
    return {"seconds": info.get("build_seconds"), "bytes": info.get("bytes"), "fresh": False}


def _gateway(api: str, requests: int) -> float | None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_gateway.py"),
            "--api",
            api,
            "--stream",
            "--requests",
            str(requests),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    for line in done.stdout.splitlines():
        if "overhead p50" in line:
            return float(line.split("overhead p50")[1].split("ms")[0])
    return None


def bench_agent(name: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    agent = catalog.agent(name)
    if agent is None:
        raise SystemExit(f"no agent {name!r}: {', '.join(catalog.agents())}")
    provider = provider_named(agent.providers[0])
    assert provider is not None
    api = agent.api(provider)
    figures: dict[str, Any] = {"agent": name, "version": agent.version, "api": api}
    figures["bundle"] = _build_figures(name, args.rebuild)
    dataset = work / f"harbor-demo-{name}"
    shutil.copytree(HARBOR_DEMO, dataset, ignore=shutil.ignore_patterns(".ageval"))
    script = json.loads(json.dumps(_yaml(SCRIPTS / f"hello-{name}.yaml")))
    model = MODELS.get(provider.name, f"{provider.name}/mock-model")
    run_seconds: list[float] = []
    scripted_seconds: list[float] = []
    startups: list[float] = []
    for _ in range(args.runs):
        with MockLLM(script) as mock:
            env = {
                provider.base_url_variable: f"http://localhost:{mock.port}{PATHS.get(api, '')}",
                provider.key_variable: "sk-bench",
            }
            result = _attempt(dataset, ["--agent", name, "--model", model], env)
            first = mock.requests[0].time if mock.requests else None
        run_seconds.append(result["seconds"]["run"])
        ready = _ready_at(dataset, result["attempt_id"])
        if first is not None and ready is not None:
            startups.append(first - ready)
        scripted = _attempt(dataset, ["--profiles", str(SCRIPTED_PROFILES)], {})
        scripted_seconds.append(scripted["seconds"]["run"])
    run = statistics.median(run_seconds)
    base = statistics.median(scripted_seconds)
    figures["attempt"] = {
        "run_stage_s": round(run, 3),
        "scripted_run_stage_s": round(base, 3),
        "overhead_s": round(run - base, 3),
        "start_to_first_request_s": round(statistics.median(startups), 3) if startups else None,
        "runs": args.runs,
    }
    figures["gateway_p50_overhead_ms"] = _gateway(api, args.gateway_requests)
    return figures


def _yaml(path: Path) -> Any:
    import yaml

    return yaml.safe_load(path.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--agents", default="", help="comma-separated (default: all)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rebuild", action="store_true", help="time fresh bundle builds")
    parser.add_argument("--gateway-requests", type=int, default=300)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    names = [n for n in args.agents.split(",") if n] or sorted(catalog.agents())
    rows = []
    with tempfile.TemporaryDirectory(prefix="ageval-bench-agents-") as folder:
        for name in names:
            rows.append(bench_agent(name, args, Path(folder)))
            if not args.json:
                _print(rows[-1])
    if args.json:
        print(json.dumps({"agents": rows}, indent=2))


def _print(row: dict[str, Any]) -> None:
    bundle, attempt = row["bundle"], row["attempt"]
    size = (bundle["bytes"] or 0) / 1e6
    built = "fresh build" if bundle["fresh"] else "this machine's build"
    startup = attempt["start_to_first_request_s"]
    gateway = row["gateway_p50_overhead_ms"]
    print(
        f"{row['agent']} {row['version']} ({row['api']}):\n"
        f"  bundle   {bundle['seconds']} s to build ({built}), {size:.0f} MB\n"
        f"  attempt  run stage {attempt['run_stage_s']:.2f} s vs scripted "
        f"{attempt['scripted_run_stage_s']:.2f} s: overhead {attempt['overhead_s']:+.2f} s; "
        f"launch to first model request {startup if startup is None else f'{startup:.2f} s'} "
        f"(median of {attempt['runs']})\n"
        f"  gateway  p50 overhead per streamed request "
        f"{'n/a' if gateway is None else f'{gateway:.2f} ms'}",
        flush=True,
    )


if __name__ == "__main__":
    main()
