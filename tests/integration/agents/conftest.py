"""Fixtures for the agent executors against a real container of the base image."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from agevalx.agents.acp.executor import AcpExecutor
from agevalx.agents.base import Container, Invocation, InvocationResult, RecordedAction
from agevalx.agents.oracle import OracleExecutor

IMAGE = "ageval/base:bookworm"


def _docker(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check)


@pytest.fixture(scope="session")
def docker_ready() -> None:
    """Skip when no Docker engine answers; fail when the engine lacks the base image."""
    try:
        info = _docker("info", check=False)
    except FileNotFoundError:
        pytest.skip("`docker info` failed: the docker CLI is not installed")
    if info.returncode != 0:
        pytest.skip(f"`docker info` failed, no Docker engine: {info.stderr.strip()[:200]}")
    if _docker("image", "inspect", IMAGE, check=False).returncode != 0:
        pytest.fail(f"the base image {IMAGE} is missing: run scripts/setup-docker.sh")


class ContainerRun:
    """An attempt container (`--init`, removed afterwards) and runners for executors in it."""

    def __init__(self, container_id: str, task_dir: Path) -> None:
        self.container = Container(id=container_id)
        self.task_dir = task_dir
        self.actions: list[RecordedAction] = []
        self.transcript: list[dict[str, Any]] = []

    def sh(self, command: str) -> subprocess.CompletedProcess[str]:
        """Run a shell command in the container (not recorded)."""
        return _docker("exec", self.container.id, "sh", "-c", command, check=False)

    def processes(self) -> list[str]:
        """The command lines of the processes running in the container."""
        listing = self.sh('for f in /proc/[0-9]*/cmdline; do tr "\\0" " " < "$f"; echo; done')
        return [line for line in listing.stdout.splitlines() if line.strip()]

    def invocation(
        self, profile: Mapping[str, Any], seconds: float, environ: Mapping[str, str]
    ) -> Invocation:
        return Invocation(
            role="solver",
            prompt="do the task",
            profile=profile,
            container=self.container,
            deadline=time.monotonic() + seconds,
            record=self.actions.append,
            transcript=self.transcript.append,
            environ=dict(environ),
            task_dir=str(self.task_dir),
        )

    def agent(
        self,
        script: Any = None,
        *,
        entry: str = "ageval-scripted-agent",
        seconds: float = 60.0,
        environ: Mapping[str, str] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> InvocationResult:
        """Run one ACP invocation (the scripted agent with `script` by default)."""
        profile_options = dict(options or {})
        if script is not None:
            (self.task_dir / "script.json").write_text(json.dumps(script))
            profile_options["script"] = "script.json"
        profile = {"executor": "acp", "entry": entry, "options": profile_options}
        return AcpExecutor().invoke(self.invocation(profile, seconds, environ or {}))

    def oracle(self, solve_sh: str, seconds: float = 60.0) -> InvocationResult:
        """Run the oracle with `solve_sh` as the task's solution."""
        solution = self.task_dir / "solution"
        solution.mkdir(exist_ok=True)
        (solution / "solve.sh").write_text(solve_sh)
        invocation = self.invocation({"executor": "oracle"}, seconds, {})
        return OracleExecutor().invoke(invocation)

    def of_type(self, kind: str) -> list[RecordedAction]:
        return [action for action in self.actions if action.type == kind]

    def step_results(self) -> list[dict[str, Any]]:
        """The scripted agent's per-step reports, in order."""
        reports = []
        for entry in self.transcript:
            update = entry.get("update", {})
            if update.get("sessionUpdate") == "agent_thought_chunk":
                reports.append(json.loads(update["content"]["text"]))
        return reports


@pytest.fixture
def attempt(docker_ready: None, tmp_path: Path) -> Iterator[ContainerRun]:
    """A fresh container of the base image with /attempt/workspace and /attempt/home."""
    name = f"ageval-agents-test-{uuid.uuid4().hex[:12]}"
    started = _docker(
        "run", "-d", "--init", "--name", name, IMAGE, "sleep", "infinity", check=False
    )
    if started.returncode != 0:
        pytest.fail(f"cannot start a container of {IMAGE}: {started.stderr.strip()}")
    container_id = started.stdout.strip()
    try:
        _docker("exec", container_id, "mkdir", "-p", "/attempt/workspace", "/attempt/home")
        task_dir = tmp_path / "task"
        task_dir.mkdir()
        yield ContainerRun(container_id, task_dir)
    finally:
        _docker("rm", "-f", container_id, check=False)
