"""A stranger's run.py runs in its harness container: it cannot read the host's files or
home, reach the Docker socket, or open a connection, and the attempt still runs through it
(invocations, commands, files). The same dataset with --trust-run-py runs in the ageval
process and reads the host: the test can fail, and docs/security.md says so."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.security.hostile import ageval_task, run

pytestmark = pytest.mark.integration

RUN_PY = """
import json, os, socket

def attempt(what):
    try:
        return what()
    except Exception as exc:
        return "refused: " + type(exc).__name__

def connect():
    with socket.create_connection(({host!r}, {port}), timeout=3) as conn:
        return conn.recv(64).decode()

def run(ctx):
    found = {{
        "secret": attempt(lambda: open({secret!r}).read()),
        "home": attempt(lambda: sorted(os.listdir({home!r}))),
        "docker_socket": os.path.exists("/var/run/docker.sock"),
        "hostname": attempt(lambda: open("/etc/hostname").read().strip()),
        "network": attempt(connect),
        "write": attempt(lambda: open({home!r} + "/planted.txt", "w").write("x")),
    }}
    ctx.invoke("solver", "solve it")
    found["exec"] = ctx.exec("cat /attempt/workspace/solved.txt").output.strip()
    ctx.write_file("found.json", json.dumps(found))
"""

EVALUATOR = """import json

def evaluate(ctx):
    found = json.loads((ctx.workspace / 'found.json').read_text())
    return {'status': 'PASS' if found['exec'] == 'solved' else 'FAIL', 'details': found}
"""


@pytest.fixture
def listener() -> Iterator[tuple[str, int]]:
    """A TCP server on the Docker bridge's gateway that greets whoever connects."""
    from agevalx.agents.mockllm import bridge_gateway

    host = bridge_gateway()
    server = socket.create_server((host, 0))
    port = server.getsockname()[1]

    def greet() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"hello from the host")

    threading.Thread(target=greet, daemon=True).start()
    yield host, port
    server.close()


def hostile_dataset(tmp_path: Path, listener: tuple[str, int]) -> tuple[Path, Path]:
    home = tmp_path / "home"
    home.mkdir()
    secret = home / "credentials"
    secret.write_text("host-only-secret\n")
    host, port = listener
    run_py = RUN_PY.format(secret=str(secret), home=str(home), host=host, port=port)
    dataset = ageval_task(
        tmp_path / "ds", "echo solved > /attempt/workspace/solved.txt\n", EVALUATOR
    )
    (dataset / "tasks/hostile/run.py").write_text(run_py)
    return dataset, home


def details(document: dict[str, Any]) -> dict[str, Any]:
    (result,) = document["results"]
    assert result["status"] == "PASS", result
    found: dict[str, Any] = result["details"]
    return found


def test_a_sandboxed_run_py_reaches_nothing_of_the_host_and_still_runs_the_attempt(
    tmp_path: Path, docker_engine: object, listener: tuple[str, int]
) -> None:
    dataset, home = hostile_dataset(tmp_path, listener)
    code, document, _ = run("run", str(dataset))
    assert code == 0, document
    found = details(document)
    assert found["secret"] == "refused: FileNotFoundError"
    assert found["home"] == "refused: FileNotFoundError"
    assert found["write"].startswith("refused: ")
    assert found["docker_socket"] is False
    assert found["network"].startswith("refused: "), found["network"]
    assert found["hostname"] != Path("/etc/hostname").read_text().strip()
    assert found["exec"] == "solved"  # the attempt ran through the channel
    assert sorted(path.name for path in home.iterdir()) == ["credentials"]


def test_a_trusted_run_py_runs_with_the_users_rights(
    tmp_path: Path, docker_engine: object, listener: tuple[str, int]
) -> None:
    dataset, home = hostile_dataset(tmp_path, listener)
    code, document, _ = run("run", str(dataset), "--trust-run-py")
    assert code == 0, document
    found = details(document)
    assert found["secret"] == "host-only-secret\n"
    assert found["network"] == "hello from the host"
    assert (home / "planted.txt").read_text() == "x"
    json.dumps(found)  # what run.py read of the host went into the attempt's records
