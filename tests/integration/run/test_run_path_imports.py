"""What a real `ageval run` process imports: a fresh oracle attempt of an ageval dataset whose
task passed lint before loads neither the ACP SDK nor aiohttp, rich, the reports, the lint
checks or the Harbor format; a scripted ACP
attempt loads the SDK (on the prefetch thread) and passes as before."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.run_path_modules import loaded

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
RUNCASES = ROOT / "tests/integration/data/runcases"
DEMO = ROOT / "examples/datasets/minimal-demo"

PROBE = """
import contextlib, io, json, sys
from agevalx.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(["run", *sys.argv[1:], "--json"])
print(json.dumps({"code": code, "run": json.loads(out.getvalue()), "modules": sorted(sys.modules)}))
"""


def run_probe(cache: Path, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args, "--cache-dir", str(cache)],
        capture_output=True,
        text=True,
        check=True,
    )
    probe: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return probe


def test_a_fresh_oracle_attempt_imports_no_acp_gateway_server_rich_or_harbor(
    copy_dataset, tmp_path: Path
) -> None:
    dataset = copy_dataset(RUNCASES)
    # The first run of these files lints the task (both formats' checks, Harbor's reader among
    # them); the task passed, so a fresh attempt of the same files lints nothing.
    first = run_probe(tmp_path / "cache", str(dataset), "--task", "echo-pass")
    assert first["code"] == 0 and "agevalx.lint.linter" in first["modules"], first["run"]
    probe = run_probe(tmp_path / "cache", str(dataset), "--task", "echo-pass", "--fresh")
    assert probe["code"] == 0, probe["run"]
    assert "agevalx.lint.linter" not in probe["modules"]
    assert probe["run"]["results"][0]["status"] == "PASS"
    assert probe["run"]["counts"]["computed"] >= 2  # the run and evaluate nodes did execute
    assert "agevalx.agents.oracle" in probe["modules"]
    assert loaded(probe["modules"]) == []


def test_a_scripted_acp_attempt_imports_the_sdk_and_passes(copy_dataset, tmp_path: Path) -> None:
    dataset = copy_dataset(DEMO)
    probe = run_probe(tmp_path / "cache", str(dataset), "--fresh")
    assert probe["code"] == 0, probe["run"]
    assert [result["status"] for result in probe["run"]["results"]] == ["PASS"]
    assert {"acp", "agevalx.agents.acp.executor"} <= set(loaded(probe["modules"]))
    assert "aiohttp" not in loaded(probe["modules"])  # the scripted agent has no model
