"""`egress: llm` across a kill -9: the next run reaps the dead process's fence (its proxy and
network), and a `--resume` that re-attaches the container puts it behind a fence of its own.

The stepper of three-steps probes the fence's proxy at every turn (`proxy.txt`); everything
the tests count is found by the labels of their own attempts.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from agevalx.cli import main
from tests.integration.conftest import committed_image
from tests.integration.recovery.test_orphans import (
    RUNCASES,
    attempts,
    count,
    kill_when,
    labelled,
    networks_of,
    own_copy,
    plain_run,
)

pytestmark = [pytest.mark.integration]

PROBE = (
    "python3 -c \"import socket; socket.create_connection(('ageval-egress-proxy', 3128), 2)\""
    " && echo proxy-ok >> proxy.txt || echo proxy-down >> proxy.txt"
)


def fenced_copy(target: Path) -> Path:
    dataset = own_copy(target)
    profiles = dataset / "profiles.yaml"
    document = yaml.safe_load(profiles.read_text())
    document["environment_options"] = {"egress": "llm"}
    profiles.write_text(yaml.safe_dump(document))
    stepper = dataset / "tasks/three-steps/solution/stepper.yaml"
    script = yaml.safe_load(stepper.read_text())
    for turn in script["turns"]:
        turn.insert(0, {"terminal": PROBE})
    stepper.write_text(yaml.safe_dump(script))
    return dataset


def test_a_killed_runs_fence_is_reaped_by_the_next_run(copy_dataset, tmp_path, capsys) -> None:
    copy_dataset(RUNCASES)  # checks the engine and the base image
    dataset = fenced_copy(tmp_path / "reap")
    kill_when(dataset, "three-steps", lambda: count(dataset, "exec") >= 1)
    assert networks_of(dataset), "the killed run left its fence network"
    assert labelled(dataset, "ageval=egress"), "and its proxy"
    document = plain_run(capsys, dataset)
    assert networks_of(dataset) == [] and labelled(dataset) == [], document["reaped"]
    assert any(name.startswith("ageval-egress-") for name in document["reaped"]["networks"])


def test_a_resumed_attempt_gets_a_fence_of_its_own(copy_dataset, tmp_path, capsys) -> None:
    copy_dataset(RUNCASES)
    dataset = fenced_copy(tmp_path / "resume")
    kill_when(dataset, "three-steps", lambda: count(dataset, "exec") >= 1)
    [attempt] = attempts(dataset)
    before = json.loads((dataset / ".ageval/runs" / attempt / "attempt.json").read_text())
    code = main(["run", str(dataset), "--task", "three-steps", "--resume", attempt, "--json"])
    document = json.loads(capsys.readouterr().out)
    (result,) = document["results"]
    assert code == 0 and result["status"] == "PASS", document
    after = json.loads((dataset / ".ageval/runs" / attempt / "attempt.json").read_text())
    assert after["container_id"] == before["container_id"], "re-attached, not rebuilt"
    run_key = next(node["key"] for node in result["nodes"] if node["kind"] == "run")
    probes = subprocess.run(
        ["docker", "run", "--rm", committed_image(run_key), "cat", "/attempt/workspace/proxy.txt"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert probes == ["proxy-ok"] * 3, "every turn, before and after the kill, had a proxy"
    assert networks_of(dataset) == [] and labelled(dataset) == [], "both fences removed"
