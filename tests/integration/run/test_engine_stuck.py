"""A Docker engine that stops answering stops the job, instead of holding each attempt in turn.

Debian's engine (20.10.24) can deadlock (docs/docker-setup.md): from then on, a call that
starts a container never returns. The test puts the engine behind a proxy on a socket of its
own (`DOCKER_HOST`, which the SDK and the docker CLI both follow) that passes every byte on,
except a request to start a container: that one it holds, unanswered, as the stuck engine
does. `ageval run` of three fresh oracle attempts, one at a time, with the engine's timeout
cut to a few seconds (`AGEVAL_ENGINE_TIMEOUT`), then ends:

- the first attempt with `engine_unavailable` (infrastructure), naming the call;
- the other two not started, with the same code: no second start reaches the engine (before,
  each attempt waited out the timeout in turn, 300 s each by default, and failed the same);
- no traceback, the created container removed, and the same command with the engine answering
  again continues the first attempt and runs the other two.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agevalx.environments.engine import LABEL, client
from tests.integration.runcases import runcases_job

pytestmark = pytest.mark.integration

AGEVAL = str(Path(sys.executable).with_name("ageval"))
ENGINE_SOCKET = "/var/run/docker.sock"
START = re.compile(rb"^POST /v[0-9.]+/containers/[^/ ]+/start[ ?]")
TASKS = ("echo-one", "echo-two", "echo-three")


class StuckStarts:
    """A unix socket in front of the engine's: every request passes, except a container's
    start, which is held unanswered (and counted) for as long as the proxy runs."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.held: list[bytes] = []
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sockets: list[socket.socket] = [self._server]
        self._lock = threading.Lock()

    def __enter__(self) -> StuckStarts:
        self._server.bind(str(self.path))
        self._server.listen(64)
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *_: object) -> None:
        with self._lock:
            for sock in self._sockets:
                sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client_side, _ = self._server.accept()
            except OSError:
                return
            engine_side = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            engine_side.connect(ENGINE_SOCKET)
            with self._lock:
                self._sockets += [client_side, engine_side]
            threading.Thread(target=self._upstream, args=(client_side, engine_side)).start()
            threading.Thread(target=self._pipe, args=(engine_side, client_side)).start()

    def _upstream(self, source: socket.socket, target: socket.socket) -> None:
        holding = False
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                return
            if not data:
                return
            if not holding and START.match(data):
                holding = True  # this connection's later bytes go nowhere, as in a stuck engine
                with self._lock:
                    self.held.append(data.split(b"\r\n", 1)[0])
            if holding:
                continue
            try:
                target.sendall(data)
            except OSError:
                return

    def _pipe(self, source: socket.socket, target: socket.socket) -> None:
        while True:
            try:
                data = source.recv(65536)
                if not data:
                    target.shutdown(socket.SHUT_WR)
                    return
                target.sendall(data)
            except OSError:
                return


def dataset(root: Path) -> Path:
    """runcases' echo-pass three times, salted: its attempts and images are this test's."""
    return runcases_job(root, dict.fromkeys(TASKS, "echo-pass"), salt=uuid.uuid4().hex)


def run(root: Path, cache: Path, env: dict[str, str], *extra: str) -> tuple[int, Any, str, float]:
    argv = [AGEVAL, "run", str(root), "--agent", "oracle", "--cache-dir", str(cache), "--json"]
    started = time.monotonic()
    done = subprocess.run(
        [*argv, *extra], capture_output=True, text=True, env={**os.environ, **env}, timeout=600
    )
    return done.returncode, json.loads(done.stdout), done.stderr, time.monotonic() - started


@pytest.fixture
def stuck(tmp_path: Path, docker_engine: object) -> Iterator[StuckStarts]:
    with StuckStarts(tmp_path / "engine.sock") as proxy:
        yield proxy


def test_a_stuck_engine_stops_the_job_at_its_first_unanswered_call(
    tmp_path: Path, stuck: StuckStarts
) -> None:
    root, cache = dataset(tmp_path / "dataset"), tmp_path / "cache"
    code, built, _, _ = run(root, cache, {})  # images built, on the engine itself
    assert code == 0, built

    through = {"DOCKER_HOST": f"unix://{stuck.path}", "AGEVAL_ENGINE_TIMEOUT": "4"}
    code, document, stderr, seconds = run(root, cache, through, "--fresh", "--max-concurrent", "1")
    assert code == 1, document
    assert "Traceback" not in stderr, stderr
    assert len(stuck.held) == 1, stuck.held  # one start reached the engine, then no other
    (result,) = document["results"]  # the attempt that met the stuck engine
    error = result["error"]
    assert (error["code"], error["class"]) == ("engine_unavailable", "infrastructure"), error
    assert re.search(r"did not answer `POST \S+/start` within 4 s", error["message"]), error
    assert "docs/docker-setup.md" in error["hint"], error
    runs = {node["id"]: node for node in document["nodes"] if node["kind"] == "run"}
    held = [node for node in runs.values() if node["outcome"] == "skipped"]
    assert len(runs) == 3 and len(held) == 2 and document["not_run"] == 2, runs
    for node in held:
        assert node["error"]["code"] == "engine_unavailable", node
        assert node["error"]["message"].startswith("not started:"), node
    assert seconds < 120, seconds

    labels = [f"{LABEL}.attempt={result['attempt_id']}"]  # its container, created, not started
    assert client().containers.list(all=True, sparse=True, filters={"label": labels}) == []

    code, again, _, _ = run(root, cache, {}, "--max-concurrent", "1")  # the same attempts
    assert code == 0, again
    assert again["continued"] == [result["attempt_id"]]
    assert sorted(item["task_id"] for item in again["results"]) == sorted(TASKS)
    assert {item["status"] for item in again["results"]} == {"PASS"}
