"""A no-op `ageval run` checks its views by the stamp instead of writing them again, and a
view edited or deleted since is written again all the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agevalx.cache.location import default_cache_dir
from agevalx.cli import main
from agevalx.operations import viewstamp

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
RUNCASES = ROOT / "tests/integration/data/runcases"


def run_json(capsys: pytest.CaptureFixture[str], dataset: Path) -> dict[str, Any]:
    code = main(["run", str(dataset), "--task", "echo-pass", "-k", "2", "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0, document
    return document


def stamps(dataset: Path) -> dict[str, int]:
    """The stamp files and their mtimes."""
    directory = dataset / viewstamp.STAMP_DIR
    return {path.name: path.stat().st_mtime_ns for path in sorted(directory.iterdir())}


def test_a_noop_run_trusts_its_stamp_until_a_view_changes(
    copy_dataset, capsys, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(viewstamp, "RACY_WINDOW_NS", 0)  # no clock tick to wait out
    dataset = copy_dataset(RUNCASES)
    first = run_json(capsys, dataset)
    assert first["counts"]["computed"] > 0
    assert not (dataset / viewstamp.STAMP_DIR).exists()  # nodes ran: nothing to stamp

    second = run_json(capsys, dataset)  # every node reused: views checked, then stamped
    assert second["counts"]["computed"] == 0
    stamped = stamps(dataset)
    assert len(stamped) == 3  # the states, the results and the job ref filed, beside them
    jobs = default_cache_dir() / "jobs"
    (ref,) = (path for path in jobs.iterdir())
    filed = ref.stat().st_mtime_ns, ref.read_bytes()

    third = run_json(capsys, dataset)
    assert stamps(dataset) == stamped  # the stamp vouched for the views: not written again
    assert third["results"] == second["results"]
    # and the job record it would file is the one filed: its ref is checked, not written
    assert (ref.stat().st_mtime_ns, ref.read_bytes()) == filed

    # a record holding what the stamp does not cover (the spend limits) is filed anew
    code = main(["run", str(dataset), "--task", "echo-pass", "-k", "2", "--max-cost", "7"])
    capsys.readouterr()
    assert code == 0
    assert ref.read_bytes() != filed[1]
    assert stamps(dataset) != stamped  # the note of the ref filed is the new one
    run_json(capsys, dataset)
    assert ref.read_bytes() == filed[1]

    runs = dataset / ".ageval/runs"
    attempts = [result["attempt_id"] for result in second["results"]]
    views = {
        (attempt, name): (runs / attempt / name).read_bytes()
        for attempt in attempts
        for name in ("result.json", "activity.jsonl")
    }
    (runs / attempts[0] / "result.json").write_text('{"status": "PASS", "score": 99}')
    (runs / attempts[1] / "activity.jsonl").unlink()
    fourth = run_json(capsys, dataset)
    assert fourth["counts"]["computed"] == 0
    assert fourth["results"] == second["results"]
    for attempt in attempts:  # both views are the cache's again
        for name in ("result.json", "activity.jsonl"):
            assert (runs / attempt / name).read_bytes() == views[attempt, name]
    assert stamps(dataset) != stamped


def test_a_job_of_reused_nodes_reports_with_no_engine_and_one_with_work_asks_for_it(
    copy_dataset, capsys, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    dataset = copy_dataset(RUNCASES)
    assert run_json(capsys, dataset)["counts"]["computed"] > 0
    reused = run_json(capsys, dataset)

    # The same job in a process whose engine does not exist: nothing to compute, so it
    # neither reaps nor asks after its images; it reports the cached results.
    no_engine = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}
    same = [sys.executable, "-m", "agevalx", "run", str(dataset), "--task", "echo-pass"]
    done = subprocess.run([*same, "-k", "2", "--json"], env=no_engine, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    document = json.loads(done.stdout)
    assert document["counts"]["computed"] == 0 and document["counts"]["failed"] == 0
    assert document["results"] == reused["results"]
    assert document["reaped"] == {"containers": [], "networks": [], "owners": [], "volumes": []}

    # One more attempt is work for the engine: the same process is refused, with its code.
    more = subprocess.run([*same, "-k", "3", "--json"], env=no_engine, capture_output=True)
    assert more.returncode == 1, more.stdout.decode()
    refused = json.loads(more.stdout)
    assert refused["error"]["code"] == "docker_unavailable", refused
