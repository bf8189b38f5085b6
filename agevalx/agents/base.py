"""The executor interface: how the run stage asks an agent to do one invocation.

An executor gets an `Invocation` (the container to work in, the prompt, the role's locked
profile, a deadline and a recorder) and returns an `InvocationResult`. Everything the agent
does in the container that the client can see (terminal commands, file reads and writes,
permission requests) is passed to `Invocation.record` *before* the result is handed back to
the agent, so the activity journal never misses a step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

ActionType = Literal["terminal", "fs_read", "fs_write", "permission", "agent_tool"]


@dataclass(frozen=True)
class RecordedAction:
    """One step the agent took in the container."""

    type: ActionType
    """`terminal` (client terminal/*), `agent_tool` (a command the agent ran itself and
    reported through session/update), `fs_read`, `fs_write`, `permission`."""
    command: str | None = None
    """The command line, for terminal and agent_tool actions."""
    cwd: str | None = None
    """Working directory of the command."""
    path: str | None = None
    """The file, for fs actions."""
    exit_code: int | None = None
    """Exit code of the command, when known."""
    output: str | None = None
    """Output of the command (truncated to a bounded size) or the file content written."""
    detail: dict[str, Any] = field(default_factory=dict)
    """Anything else worth keeping (permission options and the choice, tool call ids...)."""


@dataclass(frozen=True)
class Container:
    """The attempt container as an executor sees it."""

    id: str
    """Docker container id."""
    workdir: str = "/attempt/workspace"
    """The agent's working directory."""
    home: str = "/attempt/home"
    """The agent's HOME."""
    user: str | None = None
    """User to run as inside the container (None: the image's default)."""
    private: str | None = None
    """Where executors stage their own files (`/attempt/.ageval`); None: `.ageval` beside
    the working directory."""
    image: str | None = None
    """The image the container was started from: what every container of one image has (its
    shell) is asked once per process. None: asked each time."""
    bundles: Mapping[str, str] = field(default_factory=dict)
    """The agent bundles bind-mounted at the container's start, name to key: an executor finds
    them without asking the container. Empty when not known (a container found again after a
    crash): the executor then looks for the bundle's marker."""


@dataclass(frozen=True)
class OracleLayout:
    """Where and how the oracle runs a task's solution (its format's `oracle` hook)."""

    target: str | None = None
    """Container directory the task's solution/ is copied to; None: `<attempt>/.ageval/
    solution`."""
    command: str | None = None
    """A shell command run with `<shell> -c`; None: `<shell> <target>/solve.sh`."""
    setup: str | None = None
    """A command run once the solution is copied in, before solve.sh (as the container's
    user): directories the command writes to, the script's mode."""
    home: str | None = None
    """HOME of solve.sh; None: the agent's home."""
    environment: Mapping[str, str] = field(default_factory=dict)
    """Variables of solve.sh over the agent's; values may be secrets: they are masked in
    every record."""
    output_file: str | None = None
    """The recorded output is read from this file (the command redirects into it)."""
    whole_seconds: bool = False
    """Truncate the time left to whole seconds (Harbor's oracle does)."""
    seeded: bool = False
    """solution/ is at `target` already (the run stage copied it in with the attempt
    directories, as the container started: `TaskRuntime.oracle_seed`): not copied again."""


@dataclass(frozen=True)
class Invocation:
    """One agent invocation of the run stage."""

    role: str
    """The task's role id."""
    prompt: str
    """The text given to the agent."""
    profile: Mapping[str, Any]
    """The role's locked profile (executor, entry, model, options; api_key is a reference)."""
    container: Container
    """Where the agent works."""
    deadline: float
    """`time.monotonic()` value at which the run stage's wall time is spent."""
    record: Callable[[RecordedAction], None]
    """Append a step to the activity journal; call it before answering the agent."""
    transcript: Callable[[dict[str, Any]], None]
    """Append agent messages, tool calls and usage updates to the attempt's transcript."""
    environ: Mapping[str, str] = field(default_factory=dict)
    """Resolved secrets and settings for the agent process (never logged or cached)."""
    task_dir: str | None = None
    """Host path of the task directory (the oracle reads solution/ from it)."""
    oracle: OracleLayout | None = None
    """How the oracle runs this task's solution (its format decides); None: the default."""


@dataclass(frozen=True)
class InvocationResult:
    """How an invocation ended."""

    stop_reason: str
    """ACP stop reason (`end_turn`, `cancelled`, `max_tokens`, ...), or `exit` for oracle."""
    output: str = ""
    """The agent's final message text (or the oracle's output)."""
    exit_code: int | None = None
    """For process-like executors (oracle): the exit code."""
    usage: dict[str, Any] = field(default_factory=dict)
    """Token usage when the agent reports it."""


class AgentError(Exception):
    """An agent crashed, spoke garbage or never answered: the attempt is ERROR."""

    def __init__(self, code: str, message: str, stderr_tail: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.stderr_tail = stderr_tail


class WallTimeExceeded(Exception):
    """The run stage's wall time ran out during the invocation (after cancel/kill)."""


class Executor(Protocol):
    """Runs invocations for one executor kind (`acp`, `oracle`)."""

    def invoke(self, invocation: Invocation) -> InvocationResult: ...
