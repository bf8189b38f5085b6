"""Where executors start processes: inside the attempt container, or on this machine for tests.

Every long-lived process is started through a tiny `sh` wrapper that prints
`ageval-pid <pid>` on stdout and then `exec`s the real program. Inside a container each
`docker exec` process leads its own process group, so that pid is also the group to kill:
killing the `docker exec` client alone would leave the program running in the container.

The processes an agent's requests start are bounded per sandbox (one invocation), however
many requests are in flight: at most `EXEC_POOL` helper commands (the `fs/*` reads and
writes, probes) run at once, and at most `EXEC_POOL` terminals; requests beyond that wait
their turn (first come, first served), and none is dropped. The two pools are apart so that
long-running terminals never hold up a file request: a terminal keeps its slot until its
process ends (or is killed or released), while a helper only runs for a moment. A
`terminal/create` beyond the pool is answered once a running terminal ends. Kills do not
queue behind helpers: there is at most one per running terminal, so they are bounded too.
The agent's own process is not counted.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import io
import os
import posixpath
import shutil
import tarfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agevalx.agents.base import AgentError, Container

PID_MARKER = "ageval-pid "
"""Prefix of the first stdout line of every wrapped process."""

_ANNOUNCE_PID = 'echo "ageval-pid $$"; '
_KILL_GROUP = 'kill -s "$2" -- "-$1" 2>/dev/null || kill -s "$2" -- "$1" 2>/dev/null; true'
_HAS_BASH = "command -v bash >/dev/null 2>&1"

_SHELLS: dict[str, concurrent.futures.Future[str | None]] = {}
"""The shell found in the containers of each image, by the image's name: its probe's future,
which attempts starting at once on threads of their own (each with its event loop) share.
None: that probe failed, and whoever waited on it asks its own container."""
_SHELLS_LOCK = threading.Lock()

COMMAND_TIMEOUT = 60.0
"""Seconds a short helper command (file read or write, kill) may take."""

EXEC_POOL = 8
"""Helper commands, and again terminals, that one sandbox runs at once (module docstring)."""


@dataclass(frozen=True)
class FileBlob:
    """A file to place in the sandbox."""

    data: bytes
    mode: int = 0o644


@dataclass(frozen=True)
class ProcessSpec:
    """How to start one host-side process (the `docker exec` client, or the program itself)."""

    argv: list[str]
    env: dict[str, str]
    cwd: str | None = None
    new_session: bool = False


@dataclass(frozen=True)
class CommandResult:
    """A finished helper command."""

    returncode: int
    stdout: bytes
    stderr: bytes


@dataclass(frozen=True)
class LaunchRequest:
    """A program to run in the sandbox and the environment it gets."""

    argv: Sequence[str]
    workdir: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    """Plain variables (may show on a command line)."""
    secrets: Mapping[str, str] = field(default_factory=dict)
    """Variables whose values must never show on a command line."""
    stdin: bool = False
    report_pid: bool = False
    """Announce the pid as the first stdout line (see `parse_pid_line`)."""
    merge_stderr: bool = False
    """Send stderr to stdout inside the sandbox, so their order is kept (docker exec
    carries the two streams apart and may reorder them)."""


SandboxFactory = Callable[[Container], "Sandbox"]
"""How an executor gets the sandbox of an attempt container (`DockerSandbox`, `LocalSandbox`)."""


def staging_dir(container: Container, name: str) -> str:
    """`<attempt>/.ageval/<name>`: where executors put their own files, beside the workspace."""
    if container.private is not None:
        return posixpath.join(container.private, name)
    return posixpath.join(posixpath.dirname(container.workdir.rstrip("/")), ".ageval", name)


def parse_pid_line(line: bytes) -> int | None:
    """The pid announced by the wrapper, or None when `line` is not the announcement."""
    text = line.decode("utf-8", "replace").strip()
    if not text.startswith(PID_MARKER):
        return None
    value = text[len(PID_MARKER) :]
    return int(value) if value.isdigit() else None


class Sandbox(ABC):
    """Runs processes and places files where the agent works."""

    def __init__(self, container: Container, pool: int = EXEC_POOL) -> None:
        self.container = container
        self._helper_slots = asyncio.Semaphore(pool)
        self._terminal_slots = asyncio.Semaphore(pool)

    @abstractmethod
    def spec(self, request: LaunchRequest) -> ProcessSpec:
        """The host-side process that runs `request` in the sandbox."""

    @abstractmethod
    async def put_files(self, directory: str, files: Mapping[str, FileBlob]) -> None:
        """Write `files` (relative names) under the absolute sandbox `directory`."""

    async def start(
        self, request: LaunchRequest, *, limit: int = 2**16
    ) -> asyncio.subprocess.Process:
        """Start `request` with piped stdio."""
        spec = self.spec(request)
        stderr = asyncio.subprocess.STDOUT if request.merge_stderr else asyncio.subprocess.PIPE
        return await asyncio.create_subprocess_exec(
            *spec.argv,
            stdin=asyncio.subprocess.PIPE if request.stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=spec.env,
            cwd=spec.cwd,
            start_new_session=spec.new_session,
            limit=limit,
        )

    async def start_terminal(
        self, request: LaunchRequest
    ) -> tuple[asyncio.subprocess.Process, Callable[[], None]]:
        """Start a terminal's process once fewer than the pool's terminals run; the caller
        calls the returned `release` when the process has ended."""
        await self._terminal_slots.acquire()
        try:
            process = await self.start(request)
        except BaseException:
            self._terminal_slots.release()
            raise
        return process, self._terminal_slots.release

    async def run(
        self,
        argv: Sequence[str],
        *,
        stdin_data: bytes | None = None,
        timeout: float = COMMAND_TIMEOUT,
    ) -> CommandResult:
        """Run a short helper command to completion, once fewer than the pool's run."""
        async with self._helper_slots:
            return await self._run_now(argv, stdin_data=stdin_data, timeout=timeout)

    async def _run_now(
        self,
        argv: Sequence[str],
        *,
        stdin_data: bytes | None = None,
        timeout: float = COMMAND_TIMEOUT,
    ) -> CommandResult:
        request = LaunchRequest(argv=argv, stdin=stdin_data is not None)
        process = await self.start(request)
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(stdin_data), timeout)
        except TimeoutError:
            process.kill()
            await process.wait()
            raise
        return CommandResult(process.returncode or 0, stdout, stderr)

    async def kill_group(self, pid: int, signal: str = "KILL") -> None:
        """Signal (kill, by default) the process group led by `pid` (a pid announced by the
        wrapper)."""
        await self._run_now(["sh", "-c", _KILL_GROUP, "ageval-kill", str(pid), signal])

    async def shell(self, image: str | None = None) -> str:
        """`bash` when the sandbox has it, else `sh`: asked once per process for the
        containers of one `image` (bench_floor: an exec of about 50 ms an attempt), also when
        several attempts start at once: the first asks, the others wait for its answer."""
        if image is None:
            return await self._probe_shell()
        with _SHELLS_LOCK:
            probe = _SHELLS.get(image)
            asking = probe is None
            if probe is None:
                probe = _SHELLS[image] = concurrent.futures.Future()
        if not asking:
            answer = await asyncio.wrap_future(probe)
            return answer if answer is not None else await self._probe_shell()
        try:
            found = await self._probe_shell()
        except BaseException:
            with _SHELLS_LOCK:
                del _SHELLS[image]  # the next attempt asks again
            probe.set_result(None)
            raise
        probe.set_result(found)
        return found

    async def _probe_shell(self) -> str:
        result = await self.run(["sh", "-c", _HAS_BASH])
        return "bash" if result.returncode == 0 else "sh"

    def _wrapped(self, request: LaunchRequest) -> list[str]:
        if not (request.report_pid or request.merge_stderr):
            return list(request.argv)
        script = _ANNOUNCE_PID if request.report_pid else ""
        script += 'exec "$@" 2>&1' if request.merge_stderr else 'exec "$@"'
        return ["sh", "-c", script, "ageval-wrapper", *request.argv]


class DockerSandbox(Sandbox):
    """Processes run through `docker exec` in the attempt container; files go in with the SDK."""

    def __init__(self, container: Container, pool: int = EXEC_POOL) -> None:
        super().__init__(container, pool)
        self._docker = shutil.which("docker") or "docker"
        self._client: Any = None

    def spec(self, request: LaunchRequest) -> ProcessSpec:
        argv = [self._docker, "exec"]
        if request.stdin:
            argv.append("-i")
        if self.container.user:
            argv += ["-u", self.container.user]
        if request.workdir:
            argv += ["-w", request.workdir]
        for name, value in request.env.items():
            argv += ["-e", f"{name}={value}"]
        for name in request.secrets:
            argv += ["-e", name]
        argv.append(self.container.id)
        argv += self._wrapped(request)
        return ProcessSpec(argv=argv, env={**os.environ, **request.secrets})

    async def put_files(self, directory: str, files: Mapping[str, FileBlob]) -> None:
        archive = tar_bytes(directory, files)
        try:
            api = self._docker_api()
            ok = await asyncio.to_thread(api.put_archive, self.container.id, "/", archive)
        except Exception as exc:  # the docker SDK raises many kinds; all mean the same here
            raise AgentError(
                "sandbox_copy_failed", f"cannot copy files into {directory}: {exc}"
            ) from exc
        if not ok:
            raise AgentError("sandbox_copy_failed", f"docker refused the copy into {directory}")

    async def _run_now(
        self,
        argv: Sequence[str],
        *,
        stdin_data: bytes | None = None,
        timeout: float = COMMAND_TIMEOUT,
    ) -> CommandResult:
        """A helper command without input runs through the engine's API, which spares it a
        `docker` client process; one with input (a file write) goes through `docker exec -i`."""
        if stdin_data is not None:
            return await super()._run_now(argv, stdin_data=stdin_data, timeout=timeout)
        return await asyncio.wait_for(asyncio.to_thread(self._exec, list(argv)), timeout)

    def _exec(self, argv: list[str]) -> CommandResult:
        from agevalx.environments.container import exec_exit_code

        api = self._docker_api()
        try:
            exec_id = api.exec_create(self.container.id, argv, user=self.container.user or "")
            stdout, stderr = api.exec_start(exec_id["Id"], demux=True)
            code = exec_exit_code(api, exec_id["Id"])
        except Exception as exc:  # the engine refused (no such container...): as `docker exec`
            return CommandResult(1, b"", f"docker exec failed: {exc}".encode())
        return CommandResult(code, stdout or b"", stderr or b"")

    def _docker_api(self) -> Any:
        """The process's Docker client (one connection pool for every attempt)."""
        if self._client is None:
            from agevalx.environments.engine import client

            self._client = client().api
        return self._client


class LocalSandbox(Sandbox):
    """Processes run on this machine (unit tests and development); paths are host paths."""

    def spec(self, request: LaunchRequest) -> ProcessSpec:
        env = {**os.environ, **request.env, **request.secrets}
        return ProcessSpec(
            argv=self._wrapped(request), env=env, cwd=request.workdir, new_session=True
        )

    async def put_files(self, directory: str, files: Mapping[str, FileBlob]) -> None:
        for name, blob in files.items():
            target = Path(directory) / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blob.data)
            target.chmod(blob.mode)


def tar_bytes(directory: str, files: Mapping[str, FileBlob]) -> bytes:
    """An in-memory tar placing `files` under `directory`.

    It holds no entries for the parent folders: docker creates missing ones, and an entry for
    an existing folder would reset its owner and mode.
    """
    buffer = io.BytesIO()
    now = time.time()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, blob in sorted(files.items()):
            info = tarfile.TarInfo(posixpath.join(directory, name).lstrip("/"))
            info.size, info.mode, info.mtime = len(blob.data), blob.mode, now
            archive.addfile(info, io.BytesIO(blob.data))
    return buffer.getvalue()


def read_tree(root: Path) -> dict[str, FileBlob]:
    """Every regular file under `root` (symlinks followed), keyed by its relative posix path."""
    files: dict[str, FileBlob] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            mode = 0o755 if os.access(path, os.X_OK) else 0o644
            files[path.relative_to(root).as_posix()] = FileBlob(path.read_bytes(), mode)
    return files
