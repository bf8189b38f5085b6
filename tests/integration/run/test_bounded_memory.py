"""ageval's memory does not grow with what evaluators print or with the files it collects.

Each figure is the peak resident set of a child `ageval run` process (its own rusage from
wait4), against the same run of a task that prints or collects next to nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agevalx.cli import main

pytestmark = pytest.mark.integration

DATA = Path(__file__).resolve().parents[1] / "data"
AGEVAL = str(Path(sys.executable).with_name("ageval"))
MIB = 1 << 20
BOUND_MB = 50
"""Extra peak memory allowed over the baseline run: far below what holding the data takes."""


def peak_run(*args: str) -> tuple[float, dict[str, Any]]:
    """Run `ageval run ARGS --json` as a child; its peak RSS in MB and its document."""
    process = subprocess.Popen(
        [AGEVAL, "run", *args, "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    document: dict[str, Any] = json.loads(output)
    assert process.returncode == 0, document
    return usage.ru_maxrss * 1024 / 1e6, document


def collect_images(capsys: pytest.CaptureFixture[str]) -> None:
    """Drop this test's cache entries and the images they named (big committed layers)."""
    assert main(["cache", "gc", "--keep-newest", "0", "--images"]) == 0
    capsys.readouterr()


def test_a_200_mb_evaluator_flood_stays_bounded_in_memory(copy_dataset, capsys) -> None:
    dataset = copy_dataset(DATA / "floods")
    try:
        baseline, quiet = peak_run(str(dataset), "--task", "quiet")
        flood, flooded = peak_run(str(dataset), "--task", "evaluator-flood")
    finally:
        collect_images(capsys)
    assert quiet["results"][0]["status"] == flooded["results"][0]["status"] == "PASS"
    print(
        f"\npeak memory, 200 MB evaluator flood: {flood:.0f} MB (quiet evaluator {baseline:.0f} MB)"
    )
    assert flood - baseline < BOUND_MB


def test_collecting_a_100_mb_harbor_artifact_stays_bounded_in_memory(copy_dataset, capsys) -> None:
    dataset = copy_dataset(DATA / "harbor-floods")
    try:
        baseline, _ = peak_run(str(dataset), "--task", "small-artifact", "--agent", "oracle")
        peak, document = peak_run(str(dataset), "--task", "big-artifact", "--agent", "oracle")
        [result] = document["results"]
        collected = dataset / ".ageval/runs" / result["attempt_id"] / "artifacts/tmp/collected.bin"
        assert result["status"] == "PASS" and collected.stat().st_size == 100 * MIB
    finally:
        collect_images(capsys)
    print(
        f"\npeak memory, 100 MB Harbor artifact: {peak:.0f} MB (1 KiB artifact {baseline:.0f} MB)"
    )
    assert peak - baseline < BOUND_MB
