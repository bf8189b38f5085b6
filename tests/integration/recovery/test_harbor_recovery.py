"""A Harbor attempt's checkpoint holds its workdir and HOME, and its verifier reads the whole
container (here a file the agent wrote in /etc). So an attempt whose environment was lost
after its agent ended is redone, not scored from its checkpoint; and a fork starts from the
source's committed image, not from the checkpoint alone.

The fault is a power cut as a user meets it: the ageval process killed with -9 and the
attempt container killed, after the agent's invocation was journaled and checkpointed and
before the attempt was sealed. The agent also writes a large file outside its workdir, so
committing the container (the run stage's last step) takes long enough to be hit.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agevalx.cli import main
from agevalx.environments.engine import client
from tests.integration.security.hostile import harbor_task

pytestmark = [pytest.mark.integration]

AGEVAL = str(Path(sys.executable).with_name("ageval"))
SOLVE = "echo made > /etc/ageval-marker\necho ok > /srv/out.txt\n"
SLOW_COMMIT = "head -c 150000000 /dev/zero > /opt/bulk\n"  # the window for the fault
TEST = (
    "if [ -f /etc/ageval-marker ] && [ -f /srv/out.txt ]; then r=1; else r=0; fi\n"
    "echo $r > /logs/verifier/reward.txt\n"
)


def _journal(directory: Path, name: str = "activity.jsonl") -> list[dict[str, Any]]:
    found = []
    with contextlib.suppress(FileNotFoundError):
        for line in (directory / name).read_text().splitlines():
            with contextlib.suppress(ValueError):  # a line being written right now
                found.append(json.loads(line))
    return found


def _kill_after_checkpoint(dataset: Path) -> Path:
    """Run the task; once its invocation's checkpoint is journaled, stop the process, kill
    it (-9) and its attempt container. The attempt's directory."""
    process = subprocess.Popen(
        [AGEVAL, "run", str(dataset), "--agent", "oracle", "--fresh", "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    runs = dataset / ".ageval/runs"
    deadline = time.monotonic() + 120
    try:
        while True:
            assert process.poll() is None, "the run ended before its checkpoint was seen"
            assert time.monotonic() < deadline, "no checkpoint was journaled"
            found = [d for d in runs.glob("*") if d.is_dir()] if runs.exists() else []
            if found and any(r["type"] == "checkpoint" for r in _journal(found[0])):
                break
            time.sleep(0.02)
        os.kill(process.pid, signal.SIGSTOP)  # nothing more happens in it
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    [directory] = found
    assert not (directory / "result.json").exists(), "sealed before the fault: no fault"
    container_id = json.loads((directory / "attempt.json").read_text())["container_id"]
    client().containers.get(container_id).kill()
    return directory


def test_a_lost_harbor_environment_is_redone_not_scored_from_its_checkpoint(
    tmp_path: Path, docker_engine: object, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = harbor_task(tmp_path / "ds", SOLVE + SLOW_COMMIT, TEST)
    directory = _kill_after_checkpoint(dataset)
    done = _journal(directory)
    assert [r["type"] for r in done] == ["terminal", "invocation", "checkpoint"], done

    command = ["run", str(dataset), "--agent", "oracle", "--task", "hostile"]
    code = main([*command, "--resume", directory.name, "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0, document
    [result] = document["results"]
    # scored from the checkpoint, /etc/ageval-marker would be gone: reward 0, FAIL
    assert result["status"] == "PASS", result["details"]
    assert result["invocations"] == 1
    redone = _journal(directory)
    assert [r["type"] for r in redone] == ["terminal", "invocation", "checkpoint"]
    assert redone[0]["time"] > done[0]["time"]  # the agent ran again, in a new environment
    assert _journal(directory, "activity.abandoned.jsonl") == done  # nothing recorded is lost


def test_a_harbor_fork_starts_from_all_its_source_left(
    tmp_path: Path, docker_engine: object, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = harbor_task(tmp_path / "ds", SOLVE, TEST)
    command = ["run", str(dataset), "--agent", "oracle", "--task", "hostile", "--json"]
    assert main([*command, "--keep-recovery-state"]) == 0
    [source] = json.loads(capsys.readouterr().out)["results"]
    assert source["status"] == "PASS", source["details"]
    assert main(["checkpoints", str(dataset), "--run", source["attempt_id"], "--json"]) == 0
    [point] = json.loads(capsys.readouterr().out)["checkpoints"]

    fork = ["--fork", source["attempt_id"], "--checkpoint", str(point["seq"])]
    code = main([*command, *fork])
    document = json.loads(capsys.readouterr().out)
    assert code == 0, document
    [forked] = document["results"]
    assert forked["forked_from"] == {"attempt_id": source["attempt_id"], "checkpoint": point["key"]}
    # restored from the checkpoint alone, /etc/ageval-marker would be gone: reward 0, FAIL
    assert forked["status"] == "PASS", forked["details"]
