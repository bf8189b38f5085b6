"""`AcpExecutor`: one invocation of an Agent Client Protocol agent inside the attempt container.

The agent is started with `docker exec -i` (secrets passed by name, their values only in the
`docker exec` process's environment), spoken to with ACP v1 through the
`agent-client-protocol` SDK over `AgentChannel`, and served by `AcpClient`. The invocation
is `initialize`, `session/new`, one `session/prompt`; it ends when the prompt is answered.

Failures: an agent that exits, closes stdout, breaks the protocol or floods stdout raises
`AgentError` (`agent_crashed`, `agent_protocol_error`, `agent_error` for an error answer);
one that does not answer `initialize`/`session/new` within `handshake_timeout` (or its
catalog entry's longer `handshake_seconds`) raises `agent_timeout`. When the deadline passes,
the prompt is cancelled (`session/cancel`), the agent gets `cancel_grace` seconds to answer,
is killed, and `WallTimeExceeded` is raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import posixpath
import re
import shlex
import time
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from acp import PROTOCOL_VERSION, RequestError, connect_to_agent
from acp.client.connection import ClientSideConnection
from acp.schema import (
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    PromptResponse,
    TextContentBlock,
)
from agevalx.agents import catalog, scripted
from agevalx.agents.acp.bundled import AgentLaunch, bundled_launch
from agevalx.agents.acp.channel import AgentProcess
from agevalx.agents.acp.client import AcpClient, PermissionPolicy
from agevalx.agents.acp.recording import Recorder
from agevalx.agents.acp.sandbox import (
    DockerSandbox,
    FileBlob,
    LaunchRequest,
    Sandbox,
    SandboxFactory,
    staging_dir,
)
from agevalx.agents.acp.sdklog import sdk_logs_to
from agevalx.agents.base import (
    AgentError,
    Invocation,
    InvocationResult,
    WallTimeExceeded,
)
from agevalx.aio import run_sync

HANDSHAKE_TIMEOUT = 60.0
"""Seconds the agent has to answer `initialize` and `session/new`, each."""

CANCEL_GRACE = 2.0
"""Seconds the agent has to answer a cancelled prompt before it is killed."""

CLIENT_INFO = Implementation(name="ageval", title="ageval", version="0.1.0")

T = TypeVar("T")


class AcpExecutor:
    """Runs invocations of ACP agents (`executor: acp` profiles).

    Profile keys read: `entry` (or `options.entry`), the agent's command line, split like a
    shell would; the entry `ageval-scripted-agent` runs the shipped scripted agent with
    `options.script` (a YAML or JSON file relative to the task dir); `options.permissions`
    (`allow`, the default, or `deny`) answers permission requests; `options.agent_env` lists,
    for `api_key`, `base_url` and `model`, variables the agent reads them from (see
    `agent_secrets`).
    An entry naming an agent bundle (`pi`) runs it from the bundle, configured from the
    profile (see `bundled`).

    `invoke` runs its own event loop: call it from a thread that has none running (the run
    stage calls it from worker threads). `sandbox_factory` decides where processes run;
    tests pass `LocalSandbox` to run agents on the host.
    """

    def __init__(
        self,
        *,
        sandbox_factory: SandboxFactory = DockerSandbox,
        handshake_timeout: float = HANDSHAKE_TIMEOUT,
        cancel_grace: float = CANCEL_GRACE,
    ) -> None:
        self._sandbox_factory = sandbox_factory
        self._handshake_timeout = handshake_timeout
        self._cancel_grace = cancel_grace

    def invoke(self, invocation: Invocation) -> InvocationResult:
        """Run one prompt turn of the role's agent; see the module docstring for failures."""
        if time.monotonic() >= invocation.deadline:
            raise WallTimeExceeded("the wall time was spent before the agent started")
        return run_sync(lambda: self._invoke(invocation))

    async def _invoke(self, invocation: Invocation) -> InvocationResult:
        recorder = Recorder(invocation)
        run = _Invocation(
            invocation,
            recorder,
            self._sandbox_factory(invocation.container),
            self._handshake_timeout,
            self._cancel_grace,
        )
        try:
            with sdk_logs_to(recorder.transcript):
                return await run.execute()
        except AgentError as exc:
            mask = recorder.redactor.text
            raise AgentError(exc.code, mask(exc.message), mask(exc.stderr_tail)) from None


class _Invocation:
    """The state of one invocation: the agent process, the client, the connection."""

    def __init__(
        self,
        invocation: Invocation,
        recorder: Recorder,
        sandbox: Sandbox,
        handshake_timeout: float,
        cancel_grace: float,
    ) -> None:
        self.invocation = invocation
        self.recorder = recorder
        self.sandbox = sandbox
        self.handshake_timeout = handshake_timeout
        self.cancel_grace = cancel_grace
        self.client = AcpClient(
            sandbox=sandbox,
            container=invocation.container,
            recorder=recorder,
            permission_policy=_permission_policy(invocation.profile),
        )
        self.agent: AgentProcess | None = None
        self.kill_agent = False

    async def execute(self) -> InvocationResult:
        """Start the agent, run the handshake and the prompt, always clean up."""
        launch = await agent_launch(self.sandbox, self.invocation, self.recorder)
        try:
            response = await self._run(launch)
        finally:
            await launch.cleanup()
        if self.recorder.failure is not None:
            raise self.recorder.failure
        return self._result(response)

    async def _run(self, launch: AgentLaunch) -> PromptResponse:
        container = self.invocation.container
        if launch.handshake_seconds is not None:
            self.handshake_timeout = max(self.handshake_timeout, launch.handshake_seconds)
        request = LaunchRequest(
            argv=launch.argv,
            workdir=container.workdir,
            env={"HOME": container.home, **launch.env},
            secrets=agent_secrets(self.invocation, launch.key_variables),
            stdin=True,
            report_pid=True,
        )
        try:
            self.agent = await AgentProcess.start(self.sandbox, request, self._log_noise)
        except OSError as exc:
            message = f"cannot start {launch.argv[0]}: {exc}"
            raise AgentError("agent_start_failed", message) from exc
        conn = connect_to_agent(self.client, self.agent.channel)
        try:
            session_id = await self._handshake(conn)
            return await self._prompt(conn, session_id)
        finally:
            await self.client.terminals.close()
            await conn.close()
            await self.agent.stop(
                kill=self.kill_agent or launch.stop == "kill", terminate=launch.stop == "term"
            )

    async def _handshake(self, conn: ClientSideConnection) -> str:
        capabilities = ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
            terminal=True,
            field_meta={"terminal_output": True},
        )
        init = await self._bounded(
            conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=capabilities,
                client_info=CLIENT_INFO,
            ),
            "initialize",
        )
        if init.protocol_version != PROTOCOL_VERSION:
            raise AgentError(
                "agent_protocol_error",
                f"the agent speaks ACP version {init.protocol_version}, not {PROTOCOL_VERSION}",
            )
        workdir = self.invocation.container.workdir
        session = await self._bounded(conn.new_session(cwd=workdir, mcp_servers=[]), "session/new")
        return session.session_id

    async def _bounded(self, call: Awaitable[T], what: str) -> T:
        """Await a handshake call within the handshake timeout and the deadline."""
        remaining = self.invocation.deadline - time.monotonic()
        timeout = min(self.handshake_timeout, remaining)
        try:
            async with self._mapped_errors(what):
                return await asyncio.wait_for(call, max(timeout, 0.0))
        except TimeoutError:
            self.kill_agent = True
            if timeout >= remaining:
                raise WallTimeExceeded(f"the wall time ran out during {what}") from None
            raise AgentError(
                "agent_timeout",
                f"the agent did not answer {what} within {timeout:g} s",
                self._stderr_tail(),
            ) from None

    async def _prompt(self, conn: ClientSideConnection, session_id: str) -> PromptResponse:
        text = TextContentBlock(type="text", text=self.invocation.prompt)
        turn = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=[text]))
        try:
            async with self._mapped_errors("session/prompt"):
                remaining = self.invocation.deadline - time.monotonic()
                return await asyncio.wait_for(asyncio.shield(turn), max(remaining, 0.0))
        except TimeoutError:
            await self._cancel(conn, session_id, turn)
            raise WallTimeExceeded("the wall time ran out during the prompt turn") from None
        finally:
            turn.cancel()

    async def _cancel(
        self, conn: ClientSideConnection, session_id: str, turn: asyncio.Future[PromptResponse]
    ) -> None:
        """Send `session/cancel` and give the agent a moment to answer; it is killed after."""
        self.kill_agent = True
        with contextlib.suppress(Exception):
            await conn.cancel(session_id=session_id)
            await asyncio.wait_for(asyncio.shield(turn), self.cancel_grace)

    @contextlib.asynccontextmanager
    async def _mapped_errors(self, what: str) -> AsyncIterator[None]:
        """Turn SDK and connection errors into `AgentError`s naming the call."""
        try:
            yield
        except ConnectionError:
            assert self.agent is not None
            self.kill_agent = True
            raise await self.agent.failure(what) from None
        except RequestError as exc:
            message = f"the agent answered {what} with error {exc.code}: {exc}"
            raise AgentError("agent_error", message, self._stderr_tail()) from None
        except ValidationError as exc:
            message = f"the agent's answer to {what} is malformed: {exc.error_count()} errors"
            raise AgentError("agent_protocol_error", message, self._stderr_tail()) from None

    def _result(self, response: PromptResponse) -> InvocationResult:
        turn = self.client.turn
        usage = dict(turn.usage)
        if response.usage is not None:
            usage.update(response.usage.model_dump(mode="json", by_alias=True, exclude_none=True))
        redactor = self.recorder.redactor
        return InvocationResult(
            stop_reason=response.stop_reason,
            output=redactor.text("".join(turn.message_parts)),
            usage=redactor.value(usage),
        )

    def _log_noise(self, text: str) -> None:
        self.recorder.transcript({"type": "agent_stdout", "text": text})

    def _stderr_tail(self) -> str:
        return "" if self.agent is None else self.agent.stderr_tail


AGENT_ENV_SOURCES = {
    "api_key": "AGEVAL_API_KEY",
    "base_url": "AGEVAL_BASE_URL",
    "model": "AGEVAL_MODEL",
}
"""What `options.agent_env` may hand over, and the run stage's variable holding each."""

_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def agent_secrets(invocation: Invocation, key_variables: tuple[str, ...] = ()) -> dict[str, str]:
    """The agent process's secret environment: the run stage's variables, plus copies under
    the names `options.agent_env` lists, for agents that read their own variables:
    `agent_env: {api_key: [ANTHROPIC_API_KEY], model: [ANTHROPIC_MODEL]}` (lists, so that
    the lock's literal-secret check never sees a string under a credential-named key), and
    the key under the names a bundled agent's configuration asks for (`key_variables`)."""
    environ = dict(invocation.environ)
    key = invocation.environ.get(AGENT_ENV_SOURCES["api_key"])
    if key is not None:
        environ.update(dict.fromkeys(key_variables, key))
    mapping = (invocation.profile.get("options") or {}).get("agent_env") or {}
    if not isinstance(mapping, dict):
        raise AgentError("agent_options_invalid", "options.agent_env must be a mapping")
    for source, names in mapping.items():
        if source not in AGENT_ENV_SOURCES:
            choices = ", ".join(AGENT_ENV_SOURCES)
            message = f"options.agent_env keys are {choices}, not {source!r}"
            raise AgentError("agent_options_invalid", message)
        listed = [names] if isinstance(names, str) else names
        if not isinstance(listed, list) or not all(
            isinstance(name, str) and _VARIABLE.fullmatch(name) for name in listed
        ):
            message = f"options.agent_env.{source} must list variable names, not {names!r}"
            raise AgentError("agent_options_invalid", message)
        value = invocation.environ.get(AGENT_ENV_SOURCES[source])
        if value is not None:
            environ.update(dict.fromkeys(listed, value))
    return environ


def _permission_policy(profile: Any) -> PermissionPolicy:
    options = profile.get("options") or {}
    policy = options.get("permissions", "allow")
    if policy not in ("allow", "deny"):
        raise AgentError(
            "agent_options_invalid", f"options.permissions must be allow or deny, not {policy!r}"
        )
    return "allow" if policy == "allow" else "deny"


async def agent_launch(sandbox: Sandbox, invocation: Invocation, recorder: Recorder) -> AgentLaunch:
    """How to start the role's agent.

    A bundled agent (`pi`) is located or copied in and configured first (see `bundled`);
    the scripted agent's files are copied in; any other entry is run as given.
    """
    profile = invocation.profile
    options = profile.get("options") or {}
    entry = profile.get("entry") or options.get("entry")
    if not entry:
        raise AgentError("agent_entry_missing", f"role {invocation.role!r} names no agent entry")
    argv = shlex.split(entry)
    agent = catalog.agent(argv[0])
    if agent is not None:
        return await bundled_launch(sandbox, invocation, agent, argv[1:], recorder)
    return AgentLaunch(await agent_argv(sandbox, invocation, argv))


async def agent_argv(sandbox: Sandbox, invocation: Invocation, argv: list[str]) -> list[str]:
    """The command line of a non-bundled entry; the scripted agent's files are copied first."""
    if argv[0] != scripted.ENTRY:
        return argv
    options = invocation.profile.get("options") or {}
    script = options.get("script")
    if not script:
        raise AgentError("agent_script_missing", f"role {invocation.role!r}: no options.script")
    try:
        path = scripted.script_path(Path(invocation.task_dir or "."), script)
        script_data = scripted.script_json(path, display=str(script))
    except ValueError as exc:
        raise AgentError("agent_script_invalid", str(exc)) from None
    directory = staging_dir(invocation.container, "agent")
    script_name = f"script-{re.sub(r'[^A-Za-z0-9_.-]', '_', invocation.role)}.json"
    files = {"agent.py": FileBlob(scripted.agent_source()), script_name: FileBlob(script_data)}
    await sandbox.put_files(directory, files)
    agent = posixpath.join(directory, "agent.py")
    # The turn counter lives in HOME, so it is snapshotted with every checkpoint: the n-th
    # invocation of a role performs turn n, also after a resume or a fork.
    safe_role = re.sub(r"[^A-Za-z0-9_.-]", "_", invocation.role)
    state = posixpath.join(invocation.container.home, ".ageval-scripted", f"{safe_role}.turn")
    script_path = posixpath.join(directory, script_name)
    return ["python3", agent, "--script", script_path, "--state", state, *argv[1:]]
