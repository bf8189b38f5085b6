"""The command memo (`agevalx/cli/memo.py`) with the real `ageval` console script: a no-op
`ageval run` is answered from its last output without importing the pipeline, and the first
change to what the job reads (here its evaluator, or a Harbor task's verifier) makes it a real
run again. For both task formats: a Harbor task's artifacts, written again by every run
before, kept the views' stamp (and so the memo) from ever vouching for its job."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from agevalx.fsutil import RACY_WINDOW_NS

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
RUNCASES = ROOT / "tests/integration/data/runcases"
HARBOR_DEMO = ROOT / "examples/datasets/harbor-demo"


class Job(NamedTuple):
    source: Path
    options: tuple[str, ...]
    scorer: str
    """The file that scores the task, relative to the dataset."""
    passing: str
    failing: str
    """What in the scorer makes a pass a fail."""


JOBS = {
    "ageval": Job(
        RUNCASES,
        ("--task", "echo-pass"),
        "tasks/echo-pass/evaluator.py",
        '"PASS" if ok',
        '"FAIL" if ok',
    ),
    "harbor": Job(
        HARBOR_DEMO,
        ("--task", "hello", "--agent", "oracle"),
        "hello/tests/test.sh",
        "then echo 1",
        "then echo 0",
    ),
}

# The console script, and at its exit the agevalx modules the process had loaded (written
# after the command ended, so the recording does not see the write).
CONSOLE = """
import atexit, json, os, sys
def _loaded():
    with open(os.environ["MEMO_TEST_MODULES"], "w") as out:
        json.dump(sorted(name for name in sys.modules if name.startswith("agevalx")), out)
atexit.register(_loaded)
from agevalx.cli import console
console()
"""


def ageval(
    dataset: Path, options: tuple[str, ...], modules: Path
) -> tuple[dict[str, Any], list[str], str, str]:
    """One `ageval run` process (stdout a pipe, as in a script): its document, the agevalx
    modules it loaded and its stdout. With AGEVAL_DEBUG, a run not kept says why on stderr.
    Then the racy window is waited out: a run is kept only when nothing it read changed
    within it before the run began."""
    quiet = modules.parent / "cwd"
    quiet.mkdir(exist_ok=True)
    command = [sys.executable, "-c", CONSOLE, "run", str(dataset), *options]
    done = subprocess.run(
        [*command, "-k", "2", "--json"],
        env={**os.environ, "MEMO_TEST_MODULES": str(modules), "AGEVAL_DEBUG": "1"},
        capture_output=True,
        text=True,
        timeout=600,
        cwd=quiet,  # `python -c` puts its folder on the import path: one nothing writes in
    )
    assert done.returncode == 0, done.stdout + done.stderr
    time.sleep(RACY_WINDOW_NS / 1e9 + 0.2)
    return json.loads(done.stdout), json.loads(modules.read_text()), done.stdout, done.stderr


@pytest.mark.parametrize("form", sorted(JOBS))
def test_a_noop_run_is_answered_from_its_memo_until_its_scorer_changes(
    form, copy_dataset, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    job = JOBS[form]
    dataset = copy_dataset(job.source)
    modules = tmp_path / "modules.json"
    first, loaded, _, _ = ageval(dataset, job.options, modules)
    assert first["counts"]["computed"] > 0
    assert "agevalx.operations.run" in loaded
    # The runs after it settle what a no-op reads: the plan memo is kept, result.json is
    # written as a reused attempt's, and the views' stamp is written until it can vouch for
    # them (a stamp cannot vouch for files changed within the racy window before it). The
    # first run that only reads is kept.
    for _ in range(3):
        kept, loaded, printed, why = ageval(dataset, job.options, modules)
        if "command memo: not kept" not in why:
            break
    assert "command memo" not in why, why
    assert kept["counts"]["computed"] == 0
    assert "agevalx.operations.run" in loaded
    memos = Path(os.environ["XDG_STATE_HOME"]) / "ageval/commands"
    assert len(list(memos.iterdir())) == 1

    answered, loaded, again, _ = ageval(dataset, job.options, modules)
    assert again == printed  # byte for byte
    assert answered["results"] == kept["results"]
    planned = [name for name in loaded if name.startswith(("agevalx.operations", "agevalx.graph"))]
    assert planned == [], "the memo's answer planned"
    assert "agevalx.cli.memo" in loaded

    scorer = dataset / job.scorer
    scorer.write_text(scorer.read_text().replace(job.passing, job.failing))
    rescored, loaded, _, _ = ageval(dataset, job.options, modules)
    assert "agevalx.operations.run" in loaded
    assert rescored["counts"]["computed"] > 0
    assert {result["status"] for result in rescored["results"]} == {"FAIL"}
