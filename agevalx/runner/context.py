"""`RunContext`: what a task's run.py receives as `ctx`."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from agevalx.agents.base import InvocationResult
from agevalx.environments.container import WORKSPACE, AttemptContainer, ExecResult
from agevalx.errors import AgevalError
from agevalx.runner.activity import ActivityJournal
from agevalx.runner.recovery import Replayer, recorded_usage


class QuotaExhausted(Exception):
    """A run-stage quota ran out; the run stage ends and the evaluator still scores."""

    def __init__(self, key: str) -> None:
        super().__init__(f"the run stage's {key} quota is exhausted")
        self.key = key


@dataclass
class Quotas:
    """The run stage's limits and what has been spent so far."""

    deadline: float
    invocations_allowed: int | None
    concurrency: threading.Semaphore
    invocations_used: int = 0

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def check_time(self) -> None:
        if self.remaining() <= 0:
            raise QuotaExhausted("wall_time_seconds")


Invoker = Callable[[str, str, int], InvocationResult]


class RunContext:
    """The run stage as run.py sees it. Every call is recorded in activity.jsonl."""

    def __init__(
        self,
        *,
        task_dir: Path,
        params: dict[str, Any],
        roles: list[str],
        container: AttemptContainer,
        journal: ActivityJournal,
        quotas: Quotas,
        invoker: Invoker,
        replayer: Replayer | None = None,
        workdir: str = WORKSPACE,
    ) -> None:
        self.params = params
        """task.yaml's `parameters`."""
        self.roles = roles
        """The task's role ids."""
        self.workdir = workdir
        """The agent's working directory (`/attempt/workspace`, or where the task format says)."""
        self._task_dir = task_dir
        self._container = container
        self._journal = journal
        self._quotas = quotas
        self._invoker = invoker
        self._replayer = replayer or Replayer([])
        self._count_lock = threading.Lock()
        self.closed = False

    def _guard(self) -> None:
        if self.closed:
            raise QuotaExhausted("wall_time_seconds")
        self._quotas.check_time()

    def task_file(self, relative: str) -> Path:
        """A file of the task directory (read-only use), e.g. `ctx.task_file("lib/x.py")`."""
        path = PurePosixPath(relative)
        if path.is_absolute() or ".." in path.parts:
            raise AgevalError("invalid_path", f"{relative!r} must stay inside the task")
        return self._task_dir / relative

    def prompt(self, name: str) -> str:
        """The text of prompts/<name>."""
        return self.task_file(f"prompts/{name}").read_text(encoding="utf-8")

    def invoke(self, role: str, prompt: str) -> InvocationResult:
        """One agent invocation of `role`; counts against agent_invocations."""
        self._guard()
        if role not in self.roles:
            raise AgevalError("unknown_role", f"the task has no role {role!r}: {self.roles}")
        recorded = self._replayer.next("invocation", role=role)
        if recorded is not None:  # completed before an interruption: not called again
            return InvocationResult(
                stop_reason=str(recorded.detail.get("stop_reason", "end_turn")),
                output=recorded.output or "",
                exit_code=recorded.exit_code,
                usage=recorded_usage(recorded),
            )
        with self._count_lock:
            allowed = self._quotas.invocations_allowed
            if allowed is not None and self._quotas.invocations_used >= allowed:
                raise QuotaExhausted("agent_invocations")
            index = self._quotas.invocations_used
            self._quotas.invocations_used += 1
        with self._quotas.concurrency:
            self._guard()
            return self._invoker(role, prompt, index)

    def exec(self, command: str, timeout: float | None = None) -> ExecResult:
        """Run a shell command in the working directory; recorded as a terminal action."""
        self._guard()
        recorded = self._replayer.next("exec", command=command)
        if recorded is not None:
            return ExecResult(exit_code=recorded.exit_code or 0, output=recorded.output or "")
        budget = self._quotas.remaining()
        result = self._container.exec(
            command, timeout=min(timeout or budget, budget), workdir=self.workdir
        )
        self._journal.append(
            "exec",
            command=command,
            cwd=self.workdir,
            exit_code=result.exit_code,
            output=result.output,
            detail={"timed_out": True} if result.timed_out else {},
        )
        if self._quotas.remaining() <= 0:  # the wall time ran out during the command
            raise QuotaExhausted("wall_time_seconds")
        return result

    def _inside(self, path: str) -> str:
        relative = PurePosixPath(path)
        if relative.is_absolute() or ".." in relative.parts:
            raise AgevalError("invalid_path", f"{path!r} must stay inside the workspace")
        return relative.as_posix()

    def write_file(self, path: str, content: str) -> None:
        """Write a text file under the working directory."""
        self._guard()
        relative = self._inside(path)
        target = f"{self.workdir.rstrip('/')}/{relative}"
        if self._replayer.next("file_write", path=target):
            return
        self._container.put_files(self.workdir, {relative: (content.encode(), 0o644)})
        self._journal.append("file_write", path=target)

    def read_file(self, path: str) -> str:
        """Read a text file under the working directory."""
        self._guard()
        relative = self._inside(path)
        data = self._container.read_file(f"{self.workdir.rstrip('/')}/{relative}")
        if data is None:
            raise FileNotFoundError(path)
        return data.decode("utf-8", errors="replace")
