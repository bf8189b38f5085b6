"""kill -9 leaves containers behind; the next plain `ageval run` removes them, and only them.

Every Docker object a test looks at is found by the labels of its own attempts (or of
containers it starts itself), so other work on the same engine cannot disturb the counts.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from agevalx.cli import main
from agevalx.environments.engine import client
from agevalx.environments.owners import (
    OWNER_HOST,
    OWNER_MADE,
    OWNER_PID,
    OWNER_SCOPE,
    OWNER_START,
    process_start,
    this_process,
)
from tests.integration.conftest import this_workers

pytestmark = [pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[3]
RUNCASES = ROOT / "tests/integration/data/runcases"
AGEVAL = str(Path(sys.executable).with_name("ageval"))
IMAGE = "ageval/base:bookworm"


def own_copy(target: Path, salt: str | None = None) -> Path:
    """The runcases dataset with its tasks salted: their attempt ids are this test's alone,
    so labels find no container of anyone else running the same tests on this engine."""
    shutil.copytree(RUNCASES, target, ignore=shutil.ignore_patterns(".ageval"))
    salt = salt or uuid.uuid4().hex
    for task in ("three-steps", "sidecar", "echo-pass"):
        salt_task(target, task, salt)
    return target


def salt_task(dataset: Path, task: str, salt: str) -> None:
    path = dataset / "tasks" / task / "task.yaml"
    document = yaml.safe_load(path.read_text())
    document.setdefault("parameters", {})["salt"] = salt
    path.write_text(yaml.safe_dump(document))


def records(dataset: Path) -> list[dict[str, Any]]:
    found = []
    for path in (dataset / ".ageval/runs").glob("*/activity.jsonl"):
        for line in path.read_text().splitlines():
            with contextlib.suppress(ValueError):  # a line being written right now
                found.append(json.loads(line))
    return found


def attempts(dataset: Path) -> list[str]:
    runs = dataset / ".ageval/runs"
    return sorted(path.name for path in runs.iterdir()) if runs.exists() else []


def labelled(dataset: Path, *extra: str) -> list[Any]:
    """Containers (running or not) labelled with one of the dataset's attempts."""
    found = []
    for attempt in attempts(dataset):
        labels = this_workers(f"ageval.attempt={attempt}", *extra)
        found += client().containers.list(all=True, sparse=True, filters={"label": labels})
    return found


def networks_of(dataset: Path) -> list[Any]:
    found = []
    for attempt in attempts(dataset):
        found += client().networks.list(filters={"label": f"ageval.attempt={attempt}"})
    return found


def count(dataset: Path, kind: str) -> int:
    return sum(1 for record in records(dataset) if record["type"] == kind)


def start_run(dataset: Path, task: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [AGEVAL, "run", str(dataset), "--task", task, "--fresh", "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def kill_when(dataset: Path, task: str, condition: Callable[[], bool], timeout: float = 120) -> int:
    """Run `task` and SIGKILL the ageval process once `condition` holds; its pid."""
    process = start_run(dataset, task)
    deadline = time.monotonic() + timeout
    try:
        while not condition():
            assert process.poll() is None, "the run finished before the fault point"
            assert time.monotonic() < deadline, "the fault point was never reached"
            time.sleep(0.05)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    return process.pid


def settle(dataset: Path, timeout: float = 60) -> None:
    """Wait until no `docker compose` the killed process started still runs: SIGKILL does
    not reach its children, and one may still be creating the project's containers."""
    projects = set()
    for attempt in attempts(dataset):
        with contextlib.suppress(OSError, ValueError):
            record = json.loads((dataset / ".ageval/runs" / attempt / "attempt.json").read_text())
            if record.get("compose_project"):
                projects.add(record["compose_project"])
    deadline = time.monotonic() + timeout
    while projects and time.monotonic() < deadline:
        running = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            with contextlib.suppress(OSError):
                running.append(cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        if not any(project in line for project in projects for line in running):
            break
        time.sleep(0.1)
    time.sleep(0.5)  # a container the killed process had asked for may still be created


def plain_run(capsys: pytest.CaptureFixture[str], dataset: Path) -> dict[str, Any]:
    """`ageval run --task echo-pass`: neither --resume nor the killed task."""
    code = main(["run", str(dataset), "--task", "echo-pass", "--json"])
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert code == 0, document
    return document


FAULTS: dict[str, tuple[str, Callable[[Path], bool]]] = {
    "attempt container created": ("three-steps", lambda d: bool(labelled(d, "ageval=attempt"))),
    "mid-invocation": ("three-steps", lambda d: count(d, "terminal") >= 1),
    "during a checkpoint": ("three-steps", lambda d: count(d, "invocation") >= 2),
    "between invocations": ("three-steps", lambda d: count(d, "exec") >= 1),
    "during evaluation": ("three-steps", lambda d: bool(labelled(d, "ageval=scoring"))),
    "compose sidecars up": ("sidecar", lambda d: bool(labelled(d, "ageval=compose"))),
    "sidecars and attempt container up": (
        "sidecar",
        lambda d: bool(labelled(d, "ageval=compose")) and bool(labelled(d, "ageval=attempt")),
    ),
}


def test_a_plain_run_reaps_what_killed_runs_left(copy_dataset, tmp_path, capsys) -> None:
    copy_dataset(RUNCASES)  # checks the engine and the base image
    trials, found, left, salt = 0, 0, 0, uuid.uuid4().hex
    for trial, (fault, (task, condition)) in enumerate(FAULTS.items()):
        dataset = own_copy(tmp_path / f"trial-{trial}", salt)
        # a run with nothing to compute asks nothing of the engine: the plain run's task is
        # new in every trial
        salt_task(dataset, "echo-pass", uuid.uuid4().hex)
        pid = kill_when(dataset, task, lambda check=condition, at=dataset: check(at))
        settle(dataset)
        containers = {c.id for c in labelled(dataset)}
        networks = {n.id for n in networks_of(dataset)}
        document = plain_run(capsys, dataset)
        remaining = {c.id for c in labelled(dataset)} & containers
        remaining |= {n.id for n in networks_of(dataset)} & networks
        trials += 1
        found += len(containers) + len(networks)
        left += len(remaining)
        with capsys.disabled():
            print(f"\nkill -9 {fault}: {len(containers)} containers, {len(networks)} networks")
        assert containers, f"{fault}: the killed run had started no container"
        assert not remaining, f"{fault}: {len(remaining)} orphans survived a plain run"
        assert pid in document["reaped"]["owners"], document["reaped"]
    with capsys.disabled():
        print(f"\nkill -9 trials: {trials}, orphans found: {found}, orphans left: {left}")


def _in_scope(owner: dict[str, str]) -> dict[str, str]:
    """`owner`'s labels in this process's owner scope (the suite gives each pytest process one)
    unless they name a scope of their own."""
    scope = this_process().scope
    return {OWNER_SCOPE: scope, **owner} if scope else owner


def _owned_container(owner: dict[str, str], mark: str) -> str:
    owner = _in_scope(owner)
    labels = {"ageval": "attempt", "ageval.attempt": mark, OWNER_MADE: uuid.uuid4().hex, **owner}
    container = client().containers.run(
        IMAGE, ["sleep", "infinity"], detach=True, init=True, labels=labels
    )
    return str(container.id)


def _started_by_hand_from_an_image_of(owner: dict[str, str], mark: str) -> tuple[str, str]:
    """A container a user starts from an image ageval made (here: committed from a container
    of `owner`): it inherits the image's labels, owner and nonce. Its id and the image's."""
    labels = {"ageval": "attempt", OWNER_MADE: uuid.uuid4().hex, **_in_scope(owner)}
    made = client().containers.create(IMAGE, ["true"], labels=labels)
    try:
        image = made.commit(repository="ageval-test-orphans", tag=mark)
    finally:
        made.remove(force=True)
    container = client().containers.run(
        image.id, ["sleep", "infinity"], detach=True, init=True, labels={"ageval.attempt": mark}
    )
    assert container.labels[OWNER_PID] == owner[OWNER_PID]  # inherited from the image
    return str(container.id), str(image.id)


def _exists(container_id: str) -> bool:
    return bool(client().containers.list(all=True, sparse=True, filters={"id": container_id}))


def test_containers_of_live_owners_other_hosts_and_other_scopes_are_kept(
    copy_dataset, tmp_path, capsys
) -> None:
    copy_dataset(RUNCASES)  # checks the engine and the base image
    dataset = own_copy(tmp_path / "owners")
    host = socket.gethostname()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    start = process_start(sleeper.pid)
    assert start is not None
    live = {OWNER_HOST: host, OWNER_PID: str(sleeper.pid), OWNER_START: start}
    mark = f"owners-{uuid.uuid4().hex[:8]}"
    made = {
        "live helper": _owned_container(live, mark),
        "pid reused": _owned_container({**live, OWNER_START: "another-boot:1"}, mark),
        "other host": _owned_container({**live, OWNER_HOST: f"not-{host}", OWNER_PID: "1"}, mark),
        "ended": _owned_container({**live, OWNER_PID: str(ended.pid)}, mark),
        "other scope": _owned_container(
            {**live, OWNER_PID: str(ended.pid), OWNER_SCOPE: "another-scope"}, mark
        ),
    }
    by_hand, image = _started_by_hand_from_an_image_of({**live, OWNER_PID: str(ended.pid)}, mark)
    made["by hand"] = by_hand
    concurrent = start_run(dataset, "three-steps")
    try:
        deadline = time.monotonic() + 90
        while not labelled(dataset, "ageval=attempt"):
            assert concurrent.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        [running] = labelled(dataset, "ageval=attempt")
        plain_run(capsys, dataset)
        # gone only if the concurrent run finished (on a loaded machine it may); a reaped
        # container would fail that run, which the last assertion checks
        assert _exists(running.id) or concurrent.poll() is not None, (
            "the container of a concurrent ageval was removed"
        )
        assert _exists(made["live helper"]) and _exists(made["other host"])
        assert _exists(made["other scope"]), "a dead owner of another scope was reaped"
        assert _exists(made["by hand"]), "a user's container of an ageval image was reaped"
        assert not _exists(made["pid reused"]) and not _exists(made["ended"])
        assert concurrent.wait(timeout=180) == 0, "the concurrent run failed"
    finally:
        sleeper.kill()
        sleeper.wait()
        if concurrent.poll() is None:
            concurrent.kill()
            concurrent.wait()
        for container_id in made.values():
            with contextlib.suppress(Exception):
                client().containers.get(container_id).remove(force=True)
        with contextlib.suppress(Exception):
            client().images.remove(image, force=True)


def test_a_resume_reattaches_the_dead_owners_container(copy_dataset, tmp_path, capsys) -> None:
    copy_dataset(RUNCASES)  # checks the engine and the base image
    dataset = own_copy(tmp_path / "resume")
    kill_when(dataset, "three-steps", lambda: count(dataset, "exec") >= 1)
    [attempt] = attempts(dataset)
    before = json.loads((dataset / ".ageval/runs" / attempt / "attempt.json").read_text())
    assert before["container_name"] and before["container_id"]
    code = main(["run", str(dataset), "--task", "three-steps", "--resume", attempt, "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0 and document["results"][0]["status"] == "PASS", document
    # the resumed container was adopted; only the placeholder of the killed run's scoring
    # network (`environments.standby`) and its run.py harness (`runner.sandbox`: the resume
    # starts its own) were left to reap
    reaped = document["reaped"]["containers"]
    assert all(
        name.startswith("ageval-eval-network-") or f"{attempt}-run-py-" in name for name in reaped
    ), reaped
    after = json.loads((dataset / ".ageval/runs" / attempt / "attempt.json").read_text())
    assert after["container_id"] == before["container_id"]  # re-attached, not rebuilt
    assert labelled(dataset) == []
    marker = [f"ageval.adopts={before['container_id']}"]
    assert client().volumes.list(filters={"label": marker}) == []

    ended = subprocess.Popen([sys.executable, "-c", "pass"])  # replays reap too
    ended.wait()
    owner = {OWNER_HOST: socket.gethostname(), OWNER_PID: str(ended.pid), OWNER_START: "x:1"}
    orphan = _owned_container(owner, f"replay-{uuid.uuid4().hex[:8]}")
    code = main(["replay", str(dataset), "--run", attempt, "--json"])
    replayed = json.loads(capsys.readouterr().out)
    assert code == 0 and replayed["status"] == "matched", replayed
    assert not _exists(orphan) and ended.pid in replayed["reaped"]["owners"]


def test_a_resume_keeps_the_recovery_state_the_attempt_started_with(
    copy_dataset, tmp_path, capsys
) -> None:
    copy_dataset(RUNCASES)  # checks the engine and the base image
    dataset = own_copy(tmp_path / "keep")
    args = ["run", str(dataset), "--task", "three-steps", "--fresh", "--keep-recovery-state"]
    process = subprocess.Popen(
        [AGEVAL, *args, "--json"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 120
    try:
        while count(dataset, "exec") < 1:
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    [attempt] = attempts(dataset)
    code = main(["run", str(dataset), "--task", "three-steps", "--resume", attempt, "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0 and document["results"][0]["status"] == "PASS", document
    code = main(["checkpoints", str(dataset), "--run", attempt, "--json"])
    listing = json.loads(capsys.readouterr().out)
    assert code == 0 and listing["checkpoints"], listing  # still forkable after the resume
