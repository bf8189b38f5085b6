"""`HarborAgentExecutor`: one invocation of a Harbor agent (`executor: harbor`).

The agent runs on the host in Harbor's Python (`agent_runner.py run`, forked by this process's
runner server for the agent, `runners`) and acts in the attempt container only through
requests to this process: each `exec`, upload or download of its `BaseEnvironment` is one
JSON line on the runner's stdout, carried out here in the container (`AgentSandbox`,
Harbor's exec rules as for verifier classes), recorded in the activity journal, and answered
with one JSON line on its stdin. Commands are recorded as `terminal` actions (the exact shell
command that ran, its working directory, exit code and output), uploads as `fs_write`,
downloads as `fs_read`.

The agent's model calls go to the model gateway: the runner gets the gateway's URL as the
host reaches it (the bridge address, not `host.docker.internal`) in the provider's base-URL
variable and LiteLLM's `api_base`, and the route's token in the provider's key variable. It
inherits none of ageval's environment, so no real key reaches it; nothing of the model
reaches the container at all. The tools it runs in the container (tmux) come from their
bundles, mounted read-only, with their `bin/` first on the PATH of its commands.

When the run stage's deadline passes, the runner is killed and `WallTimeExceeded` raised;
a runner that fails or exits without an answer is an `AgentError` (`harbor_agent_failed`).
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

from agevalx.agents.acp.recording import Recorder, tail
from agevalx.agents.base import (
    AgentError,
    Invocation,
    InvocationResult,
    RecordedAction,
    WallTimeExceeded,
)
from agevalx.agents.bundles import mount_point
from agevalx.agents.catalog.base import PROVIDERS, provider_named
from agevalx.environments.container import AttemptContainer, ExecResult, find_container
from agevalx.formats.harbor import agents, runners
from agevalx.formats.harbor.plugin import SandboxFailure, VerifierDeadline, VerifierSandbox
from agevalx.gateway.attempt import CONTAINER_HOST

STDERR_LINES = 200
"""Lines of the runner's stderr kept for an error's hint."""

AGEVAL_VARIABLES = {"AGEVAL_MODEL", "AGEVAL_BASE_URL", "AGEVAL_API_KEY"}
"""Invocation variables that are ageval's, not the task's agent environment."""

MODEL_VARIABLES = frozenset(
    {provider.key_variable for provider in PROVIDERS.values()}
    | {provider.base_url_variable for provider in PROVIDERS.values()}
    | {"OPENAI_API_BASE"}
)
"""Variables that name a model key or endpoint: never handed to a Harbor agent by the task."""


class AgentSandbox(VerifierSandbox):
    """Harbor's exec and file transfers on the attempt container, for an agent: HOME is the
    agent's home, and the tool bundles' `bin/` come first on the PATH of every command."""

    def __init__(
        self,
        container: AttemptContainer,
        workdir: str,
        deadline: float,
        home: str,
        path: tuple[str, ...],
    ) -> None:
        super().__init__(container, workdir, deadline)
        self.home = home
        self.prefix = (
            f'export PATH="{":".join(path)}:$PATH"; ' if path else ""
        )  # bundle paths hold no quote or dollar: they are ageval's mount points

    def _shell_and_home(self, user: str | None) -> tuple[str, str]:
        shell, _ = super()._shell_and_home(user)
        return shell, self.home


class HarborAgentExecutor:
    """Runs invocations of `executor: harbor` roles (`options.entry`: Harbor's agent)."""

    def invoke(self, invocation: Invocation) -> InvocationResult:
        if time.monotonic() >= invocation.deadline:
            raise WallTimeExceeded("the wall time was spent before the agent started")
        recorder = Recorder(invocation)
        try:
            return _Run(invocation, recorder).execute()
        except AgentError as exc:
            mask = recorder.redactor.text
            raise AgentError(exc.code, mask(exc.message), mask(exc.stderr_tail)) from None


class _Run:
    def __init__(self, invocation: Invocation, recorder: Recorder) -> None:
        self.invocation = invocation
        self.recorder = recorder
        profile = invocation.profile
        self.name = agents.agent_name(
            str(profile.get("entry") or (profile.get("options") or {}).get("entry") or "")
        )
        self.agent, self.info = agents.checked_agent(self.name)
        container = find_container(invocation.container.id)
        if container is None:
            raise AgentError("harbor_agent_failed", "the attempt container is gone")
        self.sandbox = AgentSandbox(
            container,
            invocation.container.workdir,
            invocation.deadline,
            invocation.container.home,
            tuple(posixpath.join(mount_point(spec.name), "bin") for spec in self.agent.bundles),
        )
        self.stderr: deque[str] = deque(maxlen=STDERR_LINES)
        self.timed_out = False

    def execute(self) -> InvocationResult:
        if self.agent.prepare is not None:
            self._exec({"command": self.agent.prepare}, by="ageval")
        with tempfile.TemporaryDirectory(prefix="ageval-harbor-agent-") as trial_dir:
            config, environment = self._config(trial_dir)
            try:
                process = runners.start(
                    self.info.python, self.name, agents.runner_environment(), environment
                )
            except runners.ServerFailed as exc:
                raise AgentError(
                    "harbor_agent_failed", f"Harbor's {self.name} could not start: {exc}"
                ) from None
            drain = threading.Thread(target=self._drain, args=(process.stderr,), daemon=True)
            drain.start()
            watchdog = threading.Timer(
                max(0.0, self.invocation.deadline - time.monotonic()), self._expire, (process,)
            )
            watchdog.daemon = True
            watchdog.start()
            try:
                process.stdin.write(json.dumps(config) + "\n")
                process.stdin.flush()
                final = self._serve(process.stdout, process.stdin)
            except (BrokenPipeError, ConnectionError):
                final = None
            finally:
                watchdog.cancel()
                _stop(process)
                drain.join(5)
        if self.recorder.failure is not None:
            raise self.recorder.failure
        if self.timed_out or self.sandbox.deadline_hit:
            raise WallTimeExceeded(f"Harbor's {self.name} ran past the wall time")
        return self._result(final)

    def _config(self, trial_dir: str) -> tuple[dict[str, Any], dict[str, str]]:
        invocation = self.invocation
        profile = invocation.profile
        environ = invocation.environ
        task_env = agent_environment(environ)
        config: dict[str, Any] = {
            "agent": self.name,
            "instruction": invocation.prompt,
            "task": invocation.role,
            "trial_dir": trial_dir,
            "workdir": invocation.container.workdir,
            "user": invocation.container.user,
            "extra_env": task_env,
            "kwargs": dict(self.agent.kwargs),
        }
        runner_env: dict[str, str] = {}
        if self.agent.model:
            model = (profile.get("model") or {}).get("id") or environ.get("AGEVAL_MODEL")
            base_url = environ.get("AGEVAL_BASE_URL") or profile.get("base_url")
            if not model or not base_url:
                raise AgentError(
                    "harbor_agent_model_missing",
                    f"Harbor's {self.name} needs a model and an endpoint (model.id, base_url)",
                )
            options = profile.get("options") or {}
            provider = provider_named(str(options.get("provider") or agents.PROVIDERS[0]))
            assert provider is not None
            url = host_url(str(base_url))
            config["model"] = f"{provider.name}/{model}"
            config["kwargs"]["api_base"] = url
            runner_env[provider.base_url_variable] = url
            key = environ.get("AGEVAL_API_KEY")
            if key:
                runner_env[provider.key_variable] = key
        return config, agents.runner_environment(runner_env)

    def _serve(self, requests: IO[str], answers: IO[str]) -> dict[str, Any] | None:
        """Answer the runner's requests until its last message (None: it ended without)."""
        for line in requests:
            try:
                message = json.loads(line)
            except ValueError:
                self.stderr.append(line.rstrip())
                continue
            op = message.get("op")
            if op in ("done", "failed"):
                return dict(message)
            answer = self._answer(str(op), message)
            answers.write(json.dumps(answer) + "\n")
            answers.flush()
        return None

    def _answer(self, op: str, message: dict[str, Any]) -> dict[str, Any]:
        try:
            if op == "exec":
                return {"ok": True, "result": self._exec(message)}
            if op in ("upload_file", "upload_dir", "download_file", "download_dir"):
                self._transfer(op, str(message["source"]), str(message["target"]))
                return {"ok": True, "result": None}
            raise RuntimeError(f"ageval does not know the request {op!r}")
        except (VerifierDeadline, TimeoutError) as exc:
            return _error("TimeoutError", str(exc))
        except FileNotFoundError as exc:
            return _error("FileNotFoundError", str(exc))
        except (SandboxFailure, RuntimeError, OSError, KeyError, TypeError) as exc:
            return _error("RuntimeError", str(exc))

    def _exec(self, message: dict[str, Any], by: str = "agent") -> dict[str, Any]:
        """Run one command in the container and record it (`by` ageval: housekeeping of
        the executor, not the agent's own)."""
        command = self.sandbox.prefix + str(message["command"])
        cwd = message.get("cwd") or self.sandbox.workdir
        user = message.get("user")
        detail: dict[str, Any] = {"executor": "harbor", "agent": self.name, "by": by}
        if user is not None:
            detail["user"] = user
        try:
            result: ExecResult = self.sandbox.exec(
                command,
                cwd=cwd,
                env=message.get("env"),
                timeout_sec=message.get("timeout_sec"),
                user=user,
            )
        except Exception as exc:
            self._record("terminal", command=command, cwd=cwd, detail={**detail, "error": str(exc)})
            raise
        self._record(
            "terminal",
            command=command,
            cwd=cwd,
            exit_code=result.exit_code,
            output=tail(result.output),
            detail=detail,
        )
        return {"output": result.output, "exit_code": result.exit_code}

    def _transfer(self, op: str, source: str, target: str) -> None:
        detail = {"executor": "harbor", "agent": self.name, "operation": op}
        if op.startswith("upload"):
            action = getattr(self.sandbox, op)
            action(Path(source), target)
            self._record("fs_write", path=target, detail={**detail, "host_source": source})
        else:
            getattr(self.sandbox, op)(source, Path(target))
            self._record("fs_read", path=source, detail=detail)

    def _record(self, kind: Any, **fields: Any) -> None:
        self.recorder.action(RecordedAction(type=kind, **fields))

    def _drain(self, stream: IO[str]) -> None:
        for line in stream:
            self.stderr.append(line.rstrip())

    def _expire(self, process: runners.Runner) -> None:
        self.timed_out = True
        _stop(process)

    def _result(self, final: dict[str, Any] | None) -> InvocationResult:
        stderr = "\n".join(self.stderr)
        if final is None:
            raise AgentError(
                "harbor_agent_failed",
                f"Harbor's {self.name} ended without an answer",
                stderr,
            )
        if final.get("op") == "failed":
            raise AgentError(
                "harbor_agent_failed",
                f"Harbor's {self.name} failed: {str(final.get('error'))[:1500]}",
                str(final.get("traceback") or stderr),
            )
        context = final.get("context") or {}
        usage = {
            name: context[field]
            for name, field in (
                ("inputTokens", "n_input_tokens"),
                ("outputTokens", "n_output_tokens"),
                ("cachedReadTokens", "n_cache_tokens"),
                ("costUsd", "cost_usd"),
            )
            if context.get(field) is not None
        }
        steps = [step for step in final.get("steps") or [] if isinstance(step, dict)]
        for step in steps:
            self._transcribe(step)
        self.recorder.transcript({"type": "harbor_agent", "agent": self.name, "context": context})
        output = str(steps[-1].get("message") or "") if steps else ""
        return InvocationResult(
            stop_reason="end_turn",
            output=self.recorder.redactor.text(output),
            usage=self.recorder.redactor.value(usage),
        )

    def _transcribe(self, step: dict[str, Any]) -> None:
        """One step of the agent's trajectory as ACP session updates: its message, then its
        tool calls (terminus-2's keystrokes), so the transcript reads like an ACP agent's."""
        text = {"type": "text", "text": str(step.get("message") or "")}
        message = {"sessionUpdate": "agent_message_chunk", "content": text}
        self.recorder.transcript({"type": "session_update", "update": message})
        for call in step.get("tool_calls") or []:
            update = {
                "sessionUpdate": "tool_call",
                "toolCallId": call.get("id"),
                "title": call.get("name"),
                "kind": "execute",
                "status": "completed",
                "rawInput": call.get("arguments"),
            }
            self.recorder.transcript({"type": "session_update", "update": update})


def agent_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The task's agent environment as the Harbor agent gets it (`extra_env`: terminus-2
    puts it into its tmux session, in the container): without ageval's variables, and
    without any provider's key or endpoint variable, which only the gateway's route sets (a
    Harbor job config often passes `OPENAI_API_KEY` to its agent)."""
    return {
        name: value
        for name, value in environ.items()
        if name not in AGEVAL_VARIABLES and name not in MODEL_VARIABLES
    }


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error": {"type": kind, "message": message}}


def _stop(process: runners.Runner) -> None:
    """Kill the runner (its whole session: LiteLLM's workers too) unless it has exited."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()


def host_url(url: str) -> str:
    """The gateway's URL as this host reaches it: the container's name for the host
    (`host.docker.internal`) becomes the address the gateway listens on."""
    parts = urlsplit(url)
    if parts.hostname != CONTAINER_HOST:
        return url
    from agevalx.gateway.server import gateway_host

    host = gateway_host()
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit(parts._replace(netloc=f"{host}{port}"))
