"""Kill -9 the ageval process at many points of a run, resume, and get the uninterrupted result.

The scripted agent's invocations are counted outside the container, from the Docker engine's
own exec events, so a completed invocation that ran twice would be seen.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agevalx.cli import main
from agevalx.environments.engine import client
from agevalx.environments.owners import process_start
from tests.integration.conftest import this_workers
from tests.integration.engine_events import EVENTS, attributes

pytestmark = [pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[3]
RUNCASES = ROOT / "tests/integration/data/runcases"
AGEVAL = str(Path(sys.executable).with_name("ageval"))
TASK = "three-steps"


def records(dataset: Path) -> list[dict[str, Any]]:
    found = []
    for path in (dataset / ".ageval/runs").glob("*/activity.jsonl"):
        for line in path.read_text().splitlines():
            with contextlib.suppress(ValueError):  # a line being written right now
                found.append(json.loads(line))
    return found


def attempt_dirs(dataset: Path) -> list[Path]:
    return (
        sorted((dataset / ".ageval/runs").glob("*")) if (dataset / ".ageval/runs").exists() else []
    )


def evaluation_running(dataset: Path) -> bool:
    for directory in attempt_dirs(dataset):
        labels = this_workers(f"ageval.attempt={directory.name}", "ageval=scoring")
        if client().containers.list(sparse=True, filters={"label": labels}):
            return True
    return False


def agent_starts(since: float, attempt: str, owners: set[int]) -> int:
    """Agent processes started in the attempt's containers by these ageval processes (others
    running the same tests on this engine make containers with the same attempt id)."""
    pids = {str(pid) for pid in owners}

    def mine(event: dict[str, Any]) -> bool:
        # The engine names the command in the action (`exec_create: <command>`, Docker 20.10)
        # or in the actor's attributes (newer engines).
        said = f"{event.get('Action', '')} {json.dumps(event.get('Actor', {}))}"
        labels = attributes(event)
        return (
            "agent.py" in said
            and labels.get("ageval.attempt") == attempt
            and labels.get("ageval.owner.pid") in pids
        )

    return len(EVENTS.since(since, "exec_create", mine))


def agent_clients(dataset: Path) -> set[int]:
    """Processes running `docker exec` of the scripted agent in the dataset's attempt
    containers (the ACP executor starts each invocation's agent with one)."""
    containers = set()
    for directory in attempt_dirs(dataset):
        with contextlib.suppress(OSError, ValueError):
            containers.add(json.loads((directory / "attempt.json").read_text())["container_id"])
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile
            continue
        words = [word.decode(errors="replace") for word in argv]
        if any(w.endswith("agent.py") for w in words) and containers.intersection(words):
            found.add(int(entry.name))
    return found


def kill_when(
    dataset: Path,
    condition: Callable[[], bool],
    timeout: float = 90,
    in_flight: set[int] | None = None,
) -> int:
    """Run TASK and SIGKILL the ageval process once `condition` holds; its pid. `in_flight`
    gets the agent clients the process had started when it was killed: they outlive it (a
    kill -9 reaches one process), so the invocation each started does happen."""
    process = subprocess.Popen(
        [AGEVAL, "run", str(dataset), "--task", TASK, "--fresh", "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + timeout
    try:
        while not condition():
            assert process.poll() is None, "the run finished before the fault point"
            assert time.monotonic() < deadline, "the fault point was never reached"
            time.sleep(0.05)
    finally:
        clients = agent_clients(dataset) if in_flight is not None else set()
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        if in_flight is not None:
            in_flight |= clients | agent_clients(dataset)
    return process.pid


def resume(dataset: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    [directory] = attempt_dirs(dataset)
    assert not (directory / "result.json").exists()
    code = main(["run", str(dataset), "--task", TASK, "--resume", directory.name, "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0, document
    return document


def count(dataset: Path, kind: str) -> int:
    return sum(1 for record in records(dataset) if record["type"] == kind)


FAULTS: dict[str, Callable[[Path], bool]] = {
    # name: when to kill
    "environment start": lambda d: any((p / "attempt.json").exists() for p in attempt_dirs(d)),
    "mid-invocation": lambda d: any(r["type"] == "terminal" for r in records(d)),
    "during a checkpoint": lambda d: count(d, "invocation") >= 2,
    "between invocations": lambda d: count(d, "exec") >= 1,
    "during evaluation": evaluation_running,
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_killed_run_resumes_to_the_uninterrupted_result(copy_dataset, capsys, fault) -> None:
    dataset = copy_dataset(RUNCASES)
    condition = FAULTS[fault]
    started = time.time()
    in_flight: set[int] = set()
    killed = kill_when(dataset, lambda: condition(dataset), in_flight=in_flight)
    done_before = [r for r in records(dataset) if r["type"] == "invocation"]
    document = resume(dataset, capsys)
    result = document["results"][0]
    assert result["status"] == "PASS", result
    assert result["details"] == {"steps": ["one", "two", "three"], "after": ["0", "1", "2"]}
    final = records(dataset)
    invocations = [r for r in final if r["type"] == "invocation"]
    assert [r["invocation"] for r in invocations] == [0, 1, 2]
    assert invocations[: len(done_before)] == done_before  # nothing recorded was lost
    # Three invocations, and perhaps once more the one the kill cut short (the kill point is
    # polled: the next invocation can have started first): never a completed one again.
    starts = agent_starts(started, result["attempt_id"], {killed, os.getpid()})
    most = 3 + len(in_flight)
    assert 3 <= starts <= most, f"{starts} agent processes, {len(in_flight)} in flight at the kill"
    labels = this_workers(f"ageval.attempt={result['attempt_id']}")
    mine = client().containers.list(sparse=True, filters={"label": labels})
    assert mine == []


def test_resume_after_the_container_was_removed_by_hand(copy_dataset, capsys) -> None:
    dataset = copy_dataset(RUNCASES)
    kill_when(dataset, lambda: count(dataset, "exec") >= 1)
    [directory] = attempt_dirs(dataset)
    container_id = json.loads((directory / "attempt.json").read_text())["container_id"]
    client().containers.get(container_id).remove(force=True)
    assert resume(dataset, capsys)["results"][0]["status"] == "PASS"


def test_resume_is_refused_for_sealed_running_and_changed_attempts(copy_dataset, capsys) -> None:
    dataset = copy_dataset(RUNCASES)
    kill_when(dataset, lambda: count(dataset, "exec") >= 1)
    [directory] = attempt_dirs(dataset)
    args = ["run", str(dataset), "--task", TASK, "--resume", directory.name, "--json"]

    attempt = json.loads((directory / "attempt.json").read_text())
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "ageval"])
    running = {**attempt, "pid": sleeper.pid, "process_start": process_start(sleeper.pid)}
    try:
        (directory / "attempt.json").write_text(json.dumps(running))
        assert main(args) == 2
        assert json.loads(capsys.readouterr().out)["error"]["code"] == "resume_attempt_running"
    finally:
        sleeper.kill()
        sleeper.wait()
    (directory / "attempt.json").write_text(json.dumps(attempt))

    prompt = dataset / "tasks" / TASK / "run.py"
    original = prompt.read_text()
    prompt.write_text(original + "\n# changed\n")
    assert main(args) == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "resume_config_mismatch"
    prompt.write_text(original)

    assert main(args) == 0
    capsys.readouterr()
    assert main(args) == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "resume_sealed"
    assert json.loads((directory / "result.json").read_text())["status"] == "PASS"


def test_a_corrupt_checkpoint_is_detected_and_the_previous_one_used(copy_dataset, capsys) -> None:
    dataset = copy_dataset(RUNCASES)
    kill_when(dataset, lambda: count(dataset, "exec") >= 2)
    checkpoints = [r for r in records(dataset) if r["type"] == "checkpoint"]
    assert len(checkpoints) >= 2
    from agevalx.cache.location import default_cache_dir
    from agevalx.cache.store import CacheStore

    store = CacheStore(default_cache_dir())
    latest = store.get_tree(checkpoints[-1]["detail"]["workspace"])
    victim = next(entry for entry in latest.files() if entry.path == "steps.txt")
    blob = store.root / "objects" / "xxh3-128" / victim.digest[:2] / victim.digest[2:]
    blob.chmod(0o644)
    blob.write_bytes(b"tampered\n")
    document = resume(dataset, capsys)
    assert document["results"][0]["status"] == "PASS"
