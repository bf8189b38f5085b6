"""Runs one Harbor agent for ageval: executed by the Python that has `harbor` installed.

This file is a program, not a module of ageval: ageval (Python 3.11) starts it with Harbor's
Python (>= 3.12) and it imports nothing of ageval. Two commands:

    python agent_runner.py describe NAME   one JSON line: harbor's version, its agent names,
                                           and NAME's class (import path, installed or not)
    python agent_runner.py run             reads a JSON config line on stdin, runs the agent

`run` constructs the agent as Harbor's trial does (`AgentFactory.create_agent_from_name`),
then awaits `setup` and `run` against an environment whose `exec`, uploads and downloads are
requests to ageval: one JSON line on stdout per request, one JSON line on stdin per answer.
ageval carries them out in its attempt container and records them before answering. The last
line is `{"op": "done", "context": ..., "steps": ...}` (the agent's token counts, and its
messages and tool calls from its trajectory) or `{"op": "failed"}`.
Anything else the agent prints goes to stderr (stdout is kept for the requests alone).
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import importlib.metadata
import json
import logging
import os
import sys
import traceback
from pathlib import Path
from typing import IO, Any

STEP_TEXT = 64 * 1024
"""Characters of one step's message sent back."""

MAX_STEPS = 10_000
"""Steps sent back at most."""


class Channel:
    """Requests to ageval, one at a time, each answered before the next is sent."""

    def __init__(self, requests: IO[str], answers: IO[str]) -> None:
        self._requests = requests
        self._answers = answers
        self._lock = asyncio.Lock()

    def send(self, message: dict[str, Any]) -> None:
        self._requests.write(json.dumps(message) + "\n")
        self._requests.flush()

    async def call(self, op: str, **params: Any) -> Any:
        async with self._lock:
            self.send({"op": op, **params})
            line = await asyncio.to_thread(self._answers.readline)
        if not line:
            raise ConnectionError("ageval closed the channel")
        answer = json.loads(line)
        if answer.get("ok"):
            return answer.get("result")
        error = answer.get("error") or {}
        kinds = {
            "TimeoutError": TimeoutError,
            "FileNotFoundError": FileNotFoundError,
            "RuntimeError": RuntimeError,
        }
        raise kinds.get(str(error.get("type")), RuntimeError)(error.get("message", "failed"))


def environment_class(channel: Channel) -> Any:
    """A Harbor `BaseEnvironment` whose operations are requests on `channel`."""
    base = importlib.import_module("harbor.environments.base")
    capabilities = importlib.import_module("harbor.environments.capabilities")

    class AgevalAttempt(base.BaseEnvironment):  # type: ignore[misc,name-defined]
        """ageval's attempt container: started, stopped and kept by ageval."""

        @staticmethod
        def type() -> str:
            return "ageval"

        @property
        def capabilities(self) -> Any:
            return capabilities.EnvironmentCapabilities()

        @classmethod
        def resource_capabilities(cls) -> Any:
            return capabilities.EnvironmentResourceCapabilities()

        def _validate_definition(self) -> None:
            """ageval started the container: there is nothing to validate."""

        async def start(self, force_build: bool) -> None:
            """ageval started the container."""

        async def stop(self, delete: bool) -> None:
            """ageval removes the container."""

        async def exec(
            self,
            command: str,
            cwd: str | None = None,
            env: dict[str, str] | None = None,
            timeout_sec: int | None = None,
            user: str | int | None = None,
        ) -> Any:
            run_as = self._resolve_user(user)
            result = await channel.call(
                "exec",
                command=command,
                cwd=cwd,
                env=self._merge_env(env),
                timeout_sec=timeout_sec,
                user=None if run_as is None else str(run_as),
            )
            return base.ExecResult(
                stdout=result["output"], stderr=None, return_code=result["exit_code"]
            )

        async def upload_file(self, source_path: Path | str, target_path: str) -> None:
            await channel.call("upload_file", source=str(source_path), target=target_path)

        async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
            await channel.call("upload_dir", source=str(source_dir), target=target_dir)

        async def download_file(self, source_path: str, target_path: Path | str) -> None:
            await channel.call("download_file", source=source_path, target=str(target_path))

        async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
            await channel.call("download_dir", source=source_dir, target=str(target_dir))

    return AgevalAttempt


def describe(name: str) -> dict[str, Any]:
    """harbor's version, its agent names, and `name`'s class (None when unknown)."""
    factory = importlib.import_module("harbor.agents.factory").AgentFactory
    names = importlib.import_module("harbor.models.agent.name").AgentName
    known = sorted(names.values())
    agent: dict[str, Any] | None = None
    if name in known:
        agent = {"name": name, "registered": False}
        try:
            found = factory.get_agent_class(names(name))
        except ValueError:
            found = None  # an enum member without a class (terminus, terminus-1)
        if found is not None:
            installed = importlib.import_module("harbor.agents.installed.base")
            agent = {
                "name": name,
                "registered": True,
                "import_path": f"{found.__module__}:{found.__name__}",
                "installed": issubclass(found, installed.BaseInstalledAgent),
            }
    return {"version": importlib.metadata.version("harbor"), "names": known, "agent": agent}


async def run(config: dict[str, Any], channel: Channel) -> dict[str, Any]:
    """Construct, set up and run the agent; its context (tokens, cost) as JSON."""
    factory = importlib.import_module("harbor.agents.factory").AgentFactory
    names = importlib.import_module("harbor.models.agent.name").AgentName
    paths = importlib.import_module("harbor.models.trial.paths").TrialPaths(
        Path(config["trial_dir"])
    )
    paths.mkdir()
    task_environment = importlib.import_module("harbor.models.task.config").EnvironmentConfig(
        workdir=config["workdir"]
    )
    environment = environment_class(channel)(
        environment_dir=paths.trial_dir,
        environment_name=config["task"],
        session_id=f"{config['task']}__ageval__env",
        trial_paths=paths,
        task_env_config=task_environment,
        logger=logging.getLogger("harbor"),
    )
    environment.default_user = config.get("user")
    agent = factory.create_agent_from_name(
        names(config["agent"]),
        logs_dir=paths.agent_dir,
        model_name=config.get("model"),
        extra_env=config.get("extra_env") or {},
        **(config.get("kwargs") or {}),
    )
    imported()
    context = importlib.import_module("harbor.models.agent.context").AgentContext()
    await agent.setup(environment)
    try:
        await agent.run(config["instruction"], environment, context)
    finally:
        agent.populate_context_post_run(context)
    return {
        "context": context.model_dump(mode="json", exclude={"rollout_details", "metadata"}),
        "steps": agent_steps(paths.agent_dir / "trajectory.json"),
    }


def agent_steps(trajectory: Path) -> list[dict[str, Any]]:
    """The agent's own steps of the ATIF trajectory it wrote (when it writes one, as
    terminus-2 does): its message and its tool calls, each message cut at `STEP_TEXT`."""
    try:
        steps = json.loads(trajectory.read_text(encoding="utf-8")).get("steps") or []
    except (OSError, ValueError, AttributeError):
        return []
    return [
        {
            "message": str(step.get("message") or "")[:STEP_TEXT],
            "tool_calls": [
                {
                    "id": call.get("tool_call_id"),
                    "name": call.get("function_name"),
                    "arguments": call.get("arguments"),
                }
                for call in step.get("tool_calls") or []
            ],
        }
        for step in steps[:MAX_STEPS]
        if isinstance(step, dict) and step.get("source") == "agent"
    ]


def imported() -> None:
    """The agent's modules are imported: what they made is kept out of every later collection
    (`gc.freeze`), and the collector runs again for what the agent makes."""
    gc.freeze()
    gc.enable()


def main(argv: list[str]) -> int:
    # No cyclic collection while harbor and the agent's modules import (LiteLLM's alone is
    # 4 s of CPU, a sixth of it collections that find nothing to free): see `imported`
    gc.disable()
    requests = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever the agent or its libraries print goes to stderr
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if argv[:1] == ["describe"] and len(argv) == 2:
        requests.write(json.dumps(describe(argv[1])) + "\n")
        requests.flush()
        return 0
    if argv != ["run"]:
        print("usage: agent_runner.py describe NAME | run", file=sys.stderr)
        return 2
    config = json.loads(sys.stdin.readline())
    channel = Channel(requests, sys.stdin)
    try:
        outcome = asyncio.run(run(config, channel))
    except BaseException as exc:  # reported to ageval, which makes it the attempt's error
        channel.send(
            {
                "op": "failed",
                "error": f"{type(exc).__name__}: {exc}",
                "traceback": "".join(traceback.format_exception(exc))[-8000:],
            }
        )
        return 1
    channel.send({"op": "done", **outcome})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
