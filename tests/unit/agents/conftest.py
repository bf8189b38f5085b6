"""Fixtures for the agent executors' unit tests: agents run on this machine (`LocalSandbox`)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from agevalx.agents.acp import LocalSandbox
from agevalx.agents.acp.executor import AcpExecutor
from agevalx.agents.base import Container, Invocation, InvocationResult, RecordedAction


class AgentRun:
    """Runs the scripted agent (or any entry) locally and keeps what it recorded.

    `actions` and `transcript` stay readable when the invocation raises.
    """

    def __init__(self, root: Path) -> None:
        self.container = Container(
            id="local", workdir=str(root / "attempt/workspace"), home=str(root / "attempt/home")
        )
        Path(self.container.workdir).mkdir(parents=True)
        Path(self.container.home).mkdir(parents=True)
        self.task_dir = root / "task"
        self.task_dir.mkdir()
        self.actions: list[RecordedAction] = []
        self.transcript: list[dict[str, Any]] = []

    @property
    def workspace(self) -> Path:
        return Path(self.container.workdir)

    def __call__(
        self,
        script: Any = None,
        *,
        entry: str = "ageval-scripted-agent",
        seconds: float = 30.0,
        environ: Mapping[str, str] | None = None,
        options: Mapping[str, Any] | None = None,
        executor: AcpExecutor | None = None,
    ) -> InvocationResult:
        profile_options = dict(options or {})
        if script is not None:
            (self.task_dir / "script.json").write_text(json.dumps(script))
            profile_options.setdefault("script", "script.json")
        invocation = Invocation(
            role="solver",
            prompt="do the task",
            profile={"entry": entry, "options": profile_options},
            container=self.container,
            deadline=time.monotonic() + seconds,
            record=self.actions.append,
            transcript=self.transcript.append,
            environ=dict(environ or {}),
            task_dir=str(self.task_dir),
        )
        return (executor or AcpExecutor(sandbox_factory=LocalSandbox)).invoke(invocation)

    def of_type(self, kind: str) -> list[RecordedAction]:
        """The recorded actions of one type, in order."""
        return [action for action in self.actions if action.type == kind]

    def step_results(self) -> list[dict[str, Any]]:
        """The scripted agent's per-step reports (its thought chunks), in order."""
        reports = []
        for entry in self.transcript:
            update = entry.get("update", {})
            if update.get("sessionUpdate") == "agent_thought_chunk":
                reports.append(json.loads(update["content"]["text"]))
        return reports


@pytest.fixture
def agent_run(tmp_path: Path) -> AgentRun:
    """A local attempt (workspace, home, task dir) and a runner for agents in it."""
    return AgentRun(tmp_path)
