"""300 agent requests in flight at once: the docker exec processes they start stay bounded."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from agevalx.agents.acp.sandbox import EXEC_POOL

from .conftest import ContainerRun

pytestmark = pytest.mark.integration

AGENT = Path(__file__).with_name("request_flood_agent.py")


def docker_execs(container_id: str) -> int:
    """`docker exec` clients on this host that target the container."""
    count = 0
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if len(argv) > 2 and argv[0].endswith(b"docker") and argv[1] == b"exec":
            count += container_id.encode() in argv
    return count


PAUSE = 0.01
"""Seconds between two polls. A poll reads every process's cmdline; without a pause the thread
kept a core busy beside the attempt it measures (the test alone: 19.1 CPU-seconds without,
11.8 with, the same 9 execs seen at most). A `docker exec` client lives far longer than the
pause: its own start takes tens of milliseconds."""


class Sampler(threading.Thread):
    """Polls the number of docker exec clients until stopped; keeps the largest."""

    def __init__(self, container_id: str) -> None:
        super().__init__(daemon=True)
        self.container_id = container_id
        self.most = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(PAUSE):
            self.most = max(self.most, docker_execs(self.container_id))


def test_300_agent_requests_never_run_more_docker_execs_than_the_pools(
    attempt: ContainerRun,
) -> None:
    target = f"{attempt.container.id}:/attempt/request_flood_agent.py"
    subprocess.run(["docker", "cp", str(AGENT), target], check=True)
    sampler = Sampler(attempt.container.id)
    sampler.start()
    try:
        result = attempt.agent(entry="python3 /attempt/request_flood_agent.py 300", seconds=180)
    finally:
        sampler.stop.set()
        sampler.join()
    assert result.output == "reads=200 terminals=100 errors=0"  # none was dropped
    print(f"\nmax concurrent docker execs for 300 agent requests: {sampler.most}")
    assert sampler.most <= 2 * EXEC_POOL + 1  # helpers, terminals and the agent itself
