"""Long-run benchmark (issue 26): the soak job at full size, with and without faults.

    .venv/bin/python benchmarks/bench_longrun.py [--tasks 100] [-k 3] [--max-concurrent 4] [--json]

The soak dataset (`agevalx.testing.soak`: real pi, the scripted mock model served per
conversation, a seeded third of the tasks designed to FAIL) is run twice as a user runs it
(`ageval run ... --retry-infra 2`, a subprocess): once with no fault, once with the faults of
the soak test (a stalled stream, a burst of 429s and a run of 503s from the mock; `docker
kill` of an attempt container, `docker rm -f` of a scoring container and two `kill -9`s of
ageval from outside, the same command re-run after each). Each job has its own cache, so
nothing of the first is reused by the second. Prints:

- attempts per minute each way;
- the model tokens re-paid in the faulty job: the mock's `billed_tokens` beyond the
  fault-free job's, as a fraction of the fault-free total (the retries of the faulted
  attempts are in it, beside the requests in flight at the two kills; goal <= 2%);
- the 429s served and the gateway's concurrency curve of the last invocation (summary.json
  `run.gateway`), as a sparkline and a table.

pi's bundle is built first when missing, in `$AGEVAL_BUNDLES_DIR` (else the cache's
`bundles/`).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import uuid
from pathlib import Path
from typing import Any

from agevalx.agents import bundles
from agevalx.agents.mockllm import MockLLM
from agevalx.cache.location import default_cache_dir
from agevalx.testing.soak import SCRIPT, SoakJob, SoakOutcome, default_faults, write_soak_dataset

SPARKS = "▁▂▃▄▅▆▇█"
REPAID_GOAL = 0.02


def bundles_dir() -> Path:
    explicit = os.environ.get(bundles.BUNDLES_ENV)
    return Path(explicit) if explicit else default_cache_dir() / "bundles"


def sparkline(values: list[float]) -> str:
    if not values:
        return ""
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    return "".join(SPARKS[round((value - low) / span * (len(SPARKS) - 1))] for value in values)


def job(
    scratch: Path,
    name: str,
    mock: Any,
    args: argparse.Namespace,
    salt: str,
    faults: list[dict[str, Any]] | None = None,
) -> SoakJob:
    root = scratch / name
    dataset = write_soak_dataset(root / "dataset", args.tasks, base_url=mock.url, salt=salt)
    return SoakJob(
        dataset,
        mock,
        k=args.k,
        cache_dir=root / "cache",
        bundles_dir=bundles_dir(),
        max_concurrent=args.max_concurrent,
        late_faults=faults or (),
    )


def figures(
    clean: SoakOutcome, faulty: SoakOutcome, clean_billed: int, mock: Any
) -> dict[str, Any]:
    served = dict(mock.faults_served)
    billed = int(mock.billed_tokens)
    gateway = (faulty.summary().get("run") or {}).get("gateway") or []
    statuses = {
        name: {s: sum(r["status"] == s for r in outcome.results) for s in ("PASS", "FAIL", "ERROR")}
        for name, outcome in (("clean", clean), ("faulty", faulty))
    }
    return {
        "attempts": clean.attempts,
        "clean": {"seconds": round(clean.seconds, 1), "per_minute": clean.attempts_per_minute},
        "faulty": {"seconds": round(faulty.seconds, 1), "per_minute": faulty.attempts_per_minute},
        "statuses": statuses,
        "pass_at_k": {
            "clean": clean.summary()["overall"]["pass_at_k"],
            "faulty": faulty.summary()["overall"]["pass_at_k"],
        },
        "billed_tokens": {"clean": clean_billed, "faulty": billed},
        "repaid_fraction": (billed - clean_billed) / clean_billed if clean_billed else None,
        "faults_served": served,
        "outside_faults": [
            {"kind": f.kind, "seconds": round(f.seconds, 1), "attempt_id": f.attempt_id}
            for f in faulty.faults
        ],
        "gateway": gateway,
    }


def show(result: dict[str, Any]) -> None:
    print(f"attempts per job: {result['attempts']}")
    for name in ("clean", "faulty"):
        run = result[name]
        print(f"{name:>6}: {run['seconds']:7.1f} s  {run['per_minute']:6.1f} attempts/min  "
              f"{result['statuses'][name]}  pass@k {result['pass_at_k'][name]:.3f}")  # fmt: skip
    billed, fraction = result["billed_tokens"], result["repaid_fraction"]
    shown = "n/a" if fraction is None else f"{fraction:.2%}"
    print(f"billed tokens: clean {billed['clean']}, faulty {billed['faulty']}; "
          f"re-paid {shown} (goal <= {REPAID_GOAL:.0%})")  # fmt: skip
    print(f"mock faults served: {result['faults_served']}")
    for fault in result["outside_faults"]:
        print(f"  {fault['seconds']:7.1f} s  {fault['kind']}  {fault['attempt_id'] or ''}")
    for upstream in result["gateway"]:
        curve = upstream.get("curve") or []
        print(f"gateway {upstream.get('origin')} {upstream.get('model')}: 429s "
              f"{upstream.get('throttled')}, peak {upstream.get('peak')}, "
              f"final {upstream.get('final')}")  # fmt: skip
        print("  limit " + sparkline([float(limit) for _, limit in curve]))
        for seconds, limit in curve:
            print(f"  {float(seconds):8.1f} s  {limit}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("-k", type=int, default=3)
    parser.add_argument("--max-concurrent", type=int, default=4)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    os.environ[bundles.BUNDLES_ENV] = str(bundles_dir())
    bundles.ensure_bundle("pi")
    salt = uuid.uuid4().hex
    with tempfile.TemporaryDirectory(prefix="ageval-bench-longrun-") as directory:
        scratch = Path(directory)
        with MockLLM(SCRIPT, per_conversation=True) as mock:
            clean = job(scratch, "clean", mock, args, salt).run()
            clean_billed = int(mock.billed_tokens)
        faults = default_faults(args.tasks * args.k)
        with MockLLM(SCRIPT, per_conversation=True) as mock:
            faulty = job(scratch, "faulty", mock, args, salt, faults).run_with_faults()
            result = figures(clean, faulty, clean_billed, mock)
    result["machine"] = {"cpus": os.cpu_count(), "load_average": os.getloadavg()[0]}
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        show(result)


if __name__ == "__main__":
    main()
