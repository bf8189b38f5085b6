"""The scoring container starts in a network namespace made while the run stage ran
(`environments.standby`), and that changes nothing the evaluator sees: no process or socket
but its own, the host reachable as before. The placeholders holding those namespaces are
removed with their scoring container, when a run fails, at the end of the run and on Ctrl-C;
a re-score from the cache starts its container as before."""

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
from agevalx.environments.container import SESSION
from agevalx.environments.engine import client
from agevalx.environments.owners import OWNER_PID
from tests.integration.engine_events import watching
from tests.interrupt import sigint_at_default

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("standby_on")]


AGEVAL = str(Path(sys.executable).with_name("ageval"))
PORT = 8931
"""Where the oracle leaves a server listening in the attempt container."""
SOLVE = (
    "#!/bin/sh\n"
    "echo ok > /attempt/workspace/out.txt\n"
    f"nohup python3 -m http.server {PORT} >/dev/null 2>&1 &\n"
    "sleep 0.5\n"
)
EVALUATOR = """\
import glob, os, socket

def listening():
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            for line in list(lines)[1:]:
                fields = line.split()
                if fields[3] == "0A":
                    found.append(int(fields[1].rsplit(":", 1)[1], 16))
    return found

def evaluate(ctx):
    commands = []
    for path in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            commands.append(open(path, "rb").read().replace(b"\\0", b" ").decode().strip())
        except OSError:
            pass
    view = {
        "listening": listening(),
        # the runner (and the init that started it) is all that runs: no process of the
        # image's, not even an idle one
        "others": [command for command in commands if ".ageval-eval-" not in command],
        "servers": [command for command in commands if "http.server" in command],
        "interfaces": sorted(os.listdir("/sys/class/net")),
        "host_gateway": "host.docker.internal" in open("/etc/hosts").read(),
        "resolves": bool(socket.gethostbyname("host.docker.internal")),
        "answer": (ctx.workspace / "out.txt").read_text().strip(),
    }
    clean = not view["listening"] and not view["servers"] and not view["others"]
    ok = clean and view["answer"] == "ok" and view["host_gateway"] and "eth0" in view["interfaces"]
    return {"status": "PASS" if ok else "FAIL", "details": view}
"""


def write_dataset(root: Path, solve: str = SOLVE, run_py: str | None = None) -> Path:
    files = {
        "ageval.yaml": "format: ageval.dataset/1\ndataset_id: tests/standby\nversion: '1'\n",
        "tasks/view/task.yaml": "format: ageval.task/1\ntask_id: view\n",
        "tasks/view/environment/Dockerfile": "FROM ageval/base:bookworm\n",
        "tasks/view/solution/solve.sh": solve,
        "tasks/view/evaluator.py": EVALUATOR,
    }
    if run_py is not None:
        files["tasks/view/run.py"] = run_py
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    (root / "tasks/view/solution/solve.sh").chmod(0o755)
    return root


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["run", *args, "--agent", "oracle", "--json"])
    return code, json.loads(capsys.readouterr().out)


def watching_engine() -> contextlib.AbstractContextManager[list[dict[str, Any]]]:
    """The engine's container and network events while the block runs (a `since=` query
    sees only the engine's last 256 events)."""
    return watching({"type": ["container", "network"]})


def ours(events: list[dict[str, Any]], kind: str) -> dict[str, str]:
    """Ids of this process's containers of `kind` (the `ageval` label) in `events`."""
    found = {}
    for event in events:
        labels = event.get("Actor", {}).get("Attributes", {})
        mine = event.get("Type") == "container" and labels.get("ageval.session") == SESSION
        if mine and labels.get("ageval") == kind and event.get("Action") == "create":
            found[event["Actor"]["ID"]] = labels.get("name", "")
    return found


def connected(events: list[dict[str, Any]]) -> set[str]:
    """Containers that joined a network themselves (not another's namespace)."""
    return {
        event["Actor"]["Attributes"].get("container", "")
        for event in events
        if event.get("Type") == "network" and event.get("Action") == "connect"
    }


def session_containers(kind: str) -> list[Any]:
    labels = [f"ageval.session={SESSION}", f"ageval={kind}"]
    return list(client().containers.list(all=True, filters={"label": labels}))


def test_the_scoring_container_joins_a_namespace_started_while_the_run_stage_ran(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], docker_engine: object
) -> None:
    dataset = write_dataset(tmp_path / "dataset")
    run_json(capsys, str(dataset))  # the image and the evaluator's runtime
    with watching_engine() as events:
        code, document = run_json(capsys, str(dataset), "-k", "2", "--fresh")
    assert code == 0, document
    assert [result["status"] for result in document["results"]] == ["PASS", "PASS"], document
    placeholders, scoring = ours(events, "scoring-network"), ours(events, "scoring")
    assert len(placeholders) == 2 and len(scoring) == 2, events
    position = {
        event["Actor"]["ID"]: index
        for index, event in enumerate(events)
        if event.get("Action") == "create"
    }
    attempts = ours(events, "attempt")
    commits = [
        index
        for index, event in enumerate(events)
        if event.get("Action") == "commit" and event["Actor"]["ID"] in attempts
    ]
    made = sorted(position[identifier] for identifier in placeholders)
    assert len(commits) == 2 and all(map(int.__lt__, made, commits)), "made after its run"
    joined = connected(events)
    assert set(placeholders) <= joined and not set(scoring) & joined, "scoring joined its own"
    destroyed = {event["Actor"]["ID"] for event in events if event.get("Action") == "destroy"}
    assert set(placeholders) | set(scoring) <= destroyed
    assert not session_containers("scoring-network")


def test_the_evaluator_sees_no_process_or_socket_the_agent_left_and_reaches_the_host(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], docker_engine: object
) -> None:
    dataset = write_dataset(tmp_path / "dataset")
    code, document = run_json(capsys, str(dataset))
    (result,) = document["results"]
    assert code == 0 and result["status"] == "PASS", result
    details = result["details"]
    assert details["listening"] == [] and details["servers"] == [], details
    assert details["others"] == [], details


def test_a_rescore_from_the_cache_starts_its_container_on_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], docker_engine: object
) -> None:
    dataset = write_dataset(tmp_path / "dataset")
    code, _ = run_json(capsys, str(dataset))
    assert code == 0
    evaluator = dataset / "tasks/view/evaluator.py"
    evaluator.write_text(evaluator.read_text() + "# edited: only the evaluation runs again\n")
    with watching_engine() as events:
        code, document = run_json(capsys, str(dataset))
    assert code == 0 and document["results"][0]["status"] == "PASS", document
    outcomes = {node["kind"]: node["outcome"] for node in document["nodes"]}
    assert (outcomes["run"], outcomes["evaluate"]) == ("reused", "computed"), outcomes
    scoring = ours(events, "scoring")
    assert not ours(events, "scoring-network") and len(scoring) == 1, events
    assert set(scoring) <= connected(events)


RAISES_LATE = """\
import time

def run(ctx):
    time.sleep(2)  # the placeholder starts meanwhile
    raise RuntimeError("the run fails")
"""


def test_a_failed_runs_placeholder_is_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], docker_engine: object
) -> None:
    dataset = write_dataset(tmp_path / "dataset", run_py=RAISES_LATE)
    with watching_engine() as events:
        code, document = run_json(capsys, str(dataset))
    assert code != 0 and document["results"][0]["status"] == "ERROR", document
    placeholders = ours(events, "scoring-network")
    assert len(placeholders) == 1, events
    assert not session_containers("scoring-network")


def test_ctrl_c_removes_a_placeholder(tmp_path: Path, docker_engine: object) -> None:
    dataset = write_dataset(tmp_path / "dataset", solve="#!/bin/sh\nsleep 120\n")
    process = subprocess.Popen(
        [AGEVAL, "run", str(dataset), "--agent", "oracle", "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=sigint_at_default,
    )
    owned = {"label": [f"{OWNER_PID}={process.pid}"]}
    placeholder = {"label": [f"{OWNER_PID}={process.pid}", "ageval=scoring-network"]}
    deadline = time.monotonic() + 120
    try:  # sparse listings: a container removed meanwhile is not inspected (no 404)
        while not client().containers.list(all=True, sparse=True, filters=placeholder):
            assert process.poll() is None, "the run ended before its placeholder started"
            assert time.monotonic() < deadline, "no placeholder was started"
            time.sleep(0.1)
        os.kill(process.pid, signal.SIGINT)
        assert process.wait(timeout=60) != 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert client().containers.list(all=True, sparse=True, filters=owned) == []
