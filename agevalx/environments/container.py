"""An attempt container: started with an init process, used through exec and archives."""

from __future__ import annotations

import contextlib
import dataclasses
import re
import shlex
import shutil
import tarfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import IO, Any, BinaryIO, Protocol, TypeVar

import docker
from docker.models.containers import _create_container_args
from docker.types.daemon import CancellableStream

from agevalx.environments.archive import (
    ChunkReader,
    extract_split,
    extract_stream,
    tar_directories,
    tar_directory,
    tar_files,
)
from agevalx.environments.engine import LABEL, EnvironmentFailure, client
from agevalx.environments.gpus import check_gpus
from agevalx.environments.names import docker_name
from agevalx.environments.owners import made_labels, owner_labels
from agevalx.fsutil import open_inside

ATTEMPT = "/attempt"
"""The attempt's own folder: the workspace, the home and ageval's staging folder, no more."""
WORKSPACE = f"{ATTEMPT}/workspace"
HOME = f"{ATTEMPT}/home"
PRIVATE = f"{ATTEMPT}/.ageval"
ATTEMPT_LABEL = f"{LABEL}.attempt"
SESSION = uuid.uuid4().hex
"""Labels every container this process starts, so an interrupted run can remove them all."""
OUTPUT_LIMIT = 1 << 20
"""Bytes of a command's output kept (the last ones), and the default cap of `read_file`."""
COPY_CHUNK = 1 << 20
PAUSE_TRIES = 5  # runc's freezer can give up on a container whose processes fork busily
FREEZER_GAVE_UP = "unable to freeze"  # runc's word for it, in the engine's answer to a pause
UNFROZEN_TRIES = 5
NOT_PAUSED = "is not paused"  # the engine's answer to an unpause of a container not paused
ENDING_WAIT = 10.0
"""Seconds a container ending by itself is given before it is removed by force."""
REMOVERS = 2
"""Containers removed at once in the background (see `AttemptContainer.remove_later`)."""
T = TypeVar("T")


@dataclass(frozen=True)
class ExecResult:
    """A finished command."""

    exit_code: int
    output: str
    timed_out: bool = False


class TrustedPython(Protocol):
    """A Python this side trusts in a container whose image's programs it does not (the
    evaluator's runtime, mounted read-only; an official image's own python3)."""

    def command(self, *arguments: str) -> list[str]:
        """The argv that runs it with `arguments`."""
        ...

    @property
    def environment(self) -> dict[str, str]:
        """The variables it needs."""
        ...


@dataclass(frozen=True)
class ContainerSpec:
    """How to start an attempt (or scoring) container."""

    image: str
    name_hint: str
    network: str | None = None
    network_mode: str | None = None
    user: str | None = None
    cpus: float | None = None
    memory_mb: int | None = None
    gpus: int | None = None
    gpu_types: tuple[str, ...] = ()
    """Acceptable GPU models (checked against the engine's GPUs before the start)."""
    cap_add: tuple[str, ...] = ()
    environment: tuple[tuple[str, str], ...] = ()
    tmpfs_mb: int | None = None
    platform: str | None = None
    labels: tuple[tuple[str, str], ...] = ()
    mounts: tuple[tuple[str, str], ...] = ()
    """Read-only bind mounts (host path, container path), e.g. agent bundles."""
    name: str | None = None
    """The container's name (see `container_name`); generated from `name_hint` when None.
    The run stage names it itself, to journal the name before the container exists."""
    host_gateway: bool = True
    """Map `host.docker.internal` to the host; off behind an egress fence, whose proxy
    answers that name."""
    attempt_dirs: bool = True
    """Make /attempt/workspace, /attempt/home and /attempt/.ageval as the container starts
    (one copy in, or one exec where the image runs as another user than root); off for a
    container whose commands make what they need themselves (a container with a `user`
    always gets them, owned by that user)."""
    seed: tuple[tuple[str, str], ...] = ()
    """Host directories copied in as the container starts (host path, container path; the
    container path's parent must exist or be an attempt directory): in the same copy as the
    attempt directories where those are one copy, else one copy each after them."""
    command: tuple[str, ...] = ()
    """The main process, run as it is (the image's entrypoint is reset); none: the image's
    `sleep infinity` under the engine's init (and the image's entrypoint), a container used
    through exec. See `AttemptContainer.create` and `run_attached` for a container that runs
    one command and ends."""
    workdir: str = "/"
    """The main process's working directory (the engine makes it when the image lacks it)."""
    hardened: bool = False
    """No capabilities, no privilege gain (setuid), a read-only root filesystem (with
    `tmpfs_mb`, /tmp is writable) and at most `HARDENED_PIDS` processes: for a container that
    runs a dataset's code on ageval's behalf (run.py's harness)."""


HARDENED_PIDS = 512


def container_name(name_hint: str) -> str:
    """A fresh, unique container name for `name_hint`."""
    return f"ageval-{docker_name(name_hint)}-{uuid.uuid4().hex[:8]}"


def container_labels(spec: ContainerSpec) -> dict[str, str]:
    """What every container ageval starts is labelled with: what it is, this process's
    session, its owner (see `owners`), then the spec's own labels."""
    return {
        LABEL: "attempt",
        f"{LABEL}.session": SESSION,
        **dict(spec.labels),
        **made_labels(),
    }


def _run_arguments(spec: ContainerSpec) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "image": spec.image,
        "command": list(spec.command) or ["sleep", "infinity"],
        "detach": True,
        "init": True,
        "working_dir": spec.workdir,
        "environment": {"HOME": HOME, **dict(spec.environment)},
        "labels": container_labels(spec),
        "name": spec.name or container_name(spec.name_hint),
        "extra_hosts": {"host.docker.internal": "host-gateway"},
    }
    if spec.command:  # exactly this command: no entrypoint of the image's wraps it
        arguments["entrypoint"] = [""]
    if spec.network_mode is not None:
        arguments["network_mode"] = spec.network_mode
        arguments.pop("extra_hosts")
    elif spec.network is not None:
        arguments["network"] = spec.network
        if spec.network == "none":
            arguments.pop("extra_hosts")
    if not spec.host_gateway:
        arguments.pop("extra_hosts", None)
    if spec.user:
        arguments["user"] = spec.user
    if spec.cpus:
        arguments["nano_cpus"] = int(spec.cpus * 1e9)
    if spec.memory_mb:
        arguments["mem_limit"] = f"{spec.memory_mb}m"
    if spec.cap_add:
        arguments["cap_add"] = list(spec.cap_add)
    if spec.gpus:
        arguments["device_requests"] = [
            docker.types.DeviceRequest(count=spec.gpus, capabilities=[["gpu"]])
        ]
    if spec.tmpfs_mb:
        arguments["tmpfs"] = {"/tmp": f"size={spec.tmpfs_mb}m,mode=1777"}
    if spec.platform:
        arguments["platform"] = spec.platform
    if spec.mounts:  # as mounts, not `volumes`: those also declare the paths as the image's
        # volumes, which a commit keeps, so every container of the committed image would get
        # an anonymous volume there (left behind on the engine after each one)
        arguments["mounts"] = [
            docker.types.Mount(path, host, type="bind", read_only=True)
            for host, path in spec.mounts
        ]
    if spec.hardened:
        arguments["cap_drop"] = ["ALL"]
        arguments["security_opt"] = ["no-new-privileges"]
        arguments["read_only"] = True
        arguments["pids_limit"] = HARDENED_PIDS
    return arguments


UNSET_LABEL = "ageval.unset"
"""On a committed image: the environment variables the commit blanked (main_environment's),
space-separated; scoring unsets them (seed 000: the scoring container does not use them)."""
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class AttemptContainer:
    """A running container with /attempt/workspace and /attempt/home."""

    def __init__(self, container: Any, image: str | None = None) -> None:
        self._container = container
        self.image = image
        """The image it was started from, as its spec named it (None: not known, as for a
        container found again after a crash)."""
        self.network_owner: AttemptContainer | None = None
        """The container whose network namespace this one joined (see `standby`): removed
        right after this one."""
        self._ending = False
        """Its main process is ending by itself (`run_attached` stopped reading early)."""
        self.default_home: str | None = None
        """The home of the container's default user, once a setup command asked for it
        (Harbor's `prepare_environment`); None: not asked."""

    @property
    def id(self) -> str:
        return str(self._container.id)

    @classmethod
    def start(cls, spec: ContainerSpec) -> AttemptContainer:
        """Start the container; GPUs the engine cannot offer are `environment_gpu_unavailable`
        before anything starts."""
        started = cls._made(spec, start=True)
        try:
            started._make_attempt_dirs(spec)
        except BaseException:
            started.remove()
            raise
        return started

    @classmethod
    def create(cls, spec: ContainerSpec) -> AttemptContainer:
        """Create the container without starting it, to copy files in before its main process
        (`spec.command`) runs: see `run_attached`. No attempt directories are made."""
        return cls._made(spec, start=False)

    @classmethod
    def _made(cls, spec: ContainerSpec, *, start: bool) -> AttemptContainer:
        check_gpus(spec.gpus, spec.gpu_types, what=f"the {spec.name_hint or 'task'} container")
        try:
            container = _create(_run_arguments(spec))
            if start:
                _start(container)
        except docker.errors.APIError as exc:
            raise EnvironmentFailure(
                "environment_start_failed", f"cannot start the container: {exc.explanation}"
            ) from None
        return cls(container, spec.image)

    def run_attached(
        self, timeout: float | None = None, *, until: bytes | None = None
    ) -> ExecResult:
        """Start a created container (`create`) attached to its output, as `docker run`
        does, and wait for its main process to end: its exit code and the last
        `OUTPUT_LIMIT` bytes of its stdout and stderr. A `timeout` kills the container (exit
        137, `timed_out`). One engine call fewer than an exec in a running container, no
        process of the image's other than the command, and no kill to remove it.

        `until`: a mark; once the output holds a whole line starting with it, reading stops
        and the container's end is not waited for (`exit_code` -1): the engine's teardown of
        a stopping container (its mounts, its streams) then happens while the caller goes on,
        as an exec's container's does when it is removed in the background."""
        api = self._container.client.api
        fired, timer = self.kill_timer(timeout)
        try:
            stream = _attach(api, self.id)
            try:
                try:
                    _start(self._container)
                except docker.errors.APIError as exc:
                    raise EnvironmentFailure(
                        "environment_start_failed",
                        f"cannot start the container: {exc.explanation}",
                    ) from None
                if timer is not None:
                    timer.start()
                kept, seen = _read_until(stream, until)
            finally:
                stream.close()
            if seen:
                self._ending = True
                output = kept.decode("utf-8", errors="replace")
                return ExecResult(exit_code=-1, output=output)
            exit_code = int(api.wait(self.id).get("StatusCode", -1))
        except docker.errors.NotFound:
            exit_code, kept = 137, b""  # removed from outside: see `lost`
        except docker.errors.APIError as exc:
            raise EnvironmentFailure(
                "exec_failed", f"cannot run the container: {exc.explanation}"
            ) from None
        finally:
            if timer is not None:
                timer.cancel()
        output = kept.decode("utf-8", errors="replace")
        return ExecResult(exit_code=exit_code, output=output, timed_out=fired.is_set())

    def _make_attempt_dirs(self, spec: ContainerSpec) -> None:
        """The attempt directories (see `ContainerSpec.attempt_dirs`), then the spec's seed."""
        seed = [(Path(source), destination) for source, destination in spec.seed]
        if spec.attempt_dirs or spec.user:
            if not spec.user and _image_runs_as_root(spec.image):
                # One copy in, where an exec would start a process in the container. It sets
                # the owner and mode of a directory the image has already: only where the
                # image's processes run as root, whom neither concerns. The seed rides along.
                self.put_archive("/", tar_directories((WORKSPACE, HOME, PRIVATE), trees=seed))
                return
            setup = f"mkdir -p {WORKSPACE} {HOME} {PRIVATE}"
            if spec.user:
                setup += f" && chown -R {shlex.quote(spec.user)} {WORKSPACE} {HOME}"
            self.root_exec(setup)
        for source, destination in seed:
            self.put_directory(source, destination)

    def root_exec(self, command: str) -> None:
        """A setup command run as root from `/`; failing is an environment failure."""
        _set_up(self.exec(command, workdir="/", user="root"), f"`{command}`")

    def python_exec(self, python: TrustedPython, script: str, *arguments: str) -> None:
        """A setup step run as root from `/` by a trusted `python` (`-c script arguments`),
        not by the image's shell; failing is an environment failure, as `root_exec`'s."""
        argv = python.command("-c", script, *arguments)
        _set_up(self.exec_argv(argv, user="root", environment=python.environment), "a setup step")

    def exec(
        self,
        command: str,
        *,
        timeout: float | None = None,
        workdir: str = WORKSPACE,
        environment: dict[str, str] | None = None,
        user: str | None = None,
    ) -> ExecResult:
        """Run `command` through the image's `sh -c`; a timeout kills it by the image's
        `timeout` (exit 124/137, `timed_out`). For a container whose image the agent had
        in hand, where the caller must not trust the image's programs, see `exec_argv`.

        The output is streamed and only its last `OUTPUT_LIMIT` bytes are kept, however much
        the command prints."""
        argv = ["sh", "-c", command]
        if timeout is not None:
            seconds = max(1, int(timeout + 0.999))
            argv = ["timeout", "-s", "KILL", str(seconds), *argv]
        started = time.monotonic()
        result = self.exec_argv(argv, workdir=workdir, environment=environment, user=user)
        timed_out = (
            timeout is not None
            and result.exit_code == 137
            and (time.monotonic() - started >= timeout - 0.5)
        )
        return dataclasses.replace(result, timed_out=timed_out)

    def exec_argv(
        self,
        argv: list[str],
        *,
        timeout: float | None = None,
        workdir: str = "/",
        environment: dict[str, str] | None = None,
        user: str | None = None,
    ) -> ExecResult:
        """Run `argv` as it is, its first word the program (no shell). A `timeout` is kept
        on this side: when it passes, the container is killed (`timed_out`), so no program
        of the image's takes part, not even to count the time.

        The output is streamed and only its last `OUTPUT_LIMIT` bytes are kept."""
        api = self._container.client.api
        fired, timer = self.kill_timer(timeout)
        try:
            exec_id = api.exec_create(
                self.id,
                argv,
                workdir=workdir,
                environment={"HOME": HOME, **(environment or {})},
                user=user or "",
            )["Id"]
            stream = api.exec_start(exec_id, stream=True)
            if timer is not None:
                timer.start()
            try:
                kept = bounded_tail(stream, OUTPUT_LIMIT)
            finally:
                stream.close()
            exit_code = exec_exit_code(api, exec_id)
        except docker.errors.APIError as exc:
            raise EnvironmentFailure(
                "exec_failed", f"docker exec failed: {exc.explanation}"
            ) from None
        finally:
            if timer is not None:
                timer.cancel()
        output = kept.decode("utf-8", errors="replace")
        return ExecResult(exit_code=exit_code, output=output, timed_out=fired.is_set())

    def kill_timer(self, timeout: float | None) -> tuple[threading.Event, threading.Timer | None]:
        """A timer (not started) that kills this container after `timeout`, and the event it
        sets when it does; no timer when `timeout` is None."""
        fired = threading.Event()
        if timeout is None:
            return fired, None
        api = self._container.client.api

        def kill() -> None:
            fired.set()
            with contextlib.suppress(docker.errors.APIError):
                api.kill(self.id)

        timer = threading.Timer(timeout, kill)
        timer.daemon = True
        return fired, timer

    def exec_socket(
        self,
        argv: list[str],
        *,
        workdir: str = "/",
        environment: dict[str, str] | None = None,
        user: str | None = None,
    ) -> tuple[str, Any]:
        """Start `argv` with its stdin attached; its exec id and the raw socket (multiplexed
        stdout/stderr frames to read, stdin to write). See `exit_code_of`."""
        api = self._container.client.api
        try:
            exec_id = api.exec_create(
                self.id,
                argv,
                stdin=True,
                workdir=workdir,
                environment={"HOME": HOME, **(environment or {})},
                user=user or "",
            )["Id"]
            sock = api.exec_start(exec_id, socket=True)
        except docker.errors.APIError as exc:
            raise EnvironmentFailure(
                "exec_failed", f"docker exec failed: {exc.explanation}"
            ) from None
        return str(exec_id), getattr(sock, "_sock", sock)

    def exit_code_of(self, exec_id: str) -> int:
        return exec_exit_code(self._container.client.api, exec_id)

    def put_directory(
        self, source: Path, destination: str, *, executable: Iterable[str] = ()
    ) -> None:
        """Copy a host directory to `destination` (created; its parent must exist); the
        regular files of `executable` (relative paths) arrive executable by all.

        The archive is extracted at `/` with the whole path in its member names: Docker
        refuses a relative symlink that climbs above the directory it extracts into, and an
        agent may have left one (`../../../etc/passwd` under the workspace) that restores
        must keep as it was."""
        self._put("/", tar_directory(source, destination.strip("/"), executable))

    def default_user(self) -> str | None:
        """The user the container's processes run as by default (its `User`: a name or uid,
        with an optional group); empty for root; None when the engine cannot say."""
        try:
            config = self._container.client.api.inspect_container(self.id).get("Config") or {}
        except docker.errors.DockerException:
            return None
        return str(config.get("User") or "")

    def put_files(self, destination: str, files: dict[str, tuple[bytes, int]]) -> None:
        self.root_exec(f"mkdir -p {shlex.quote(destination)}")
        self._put(destination, tar_files(files))

    def put_archive(self, parent: str, data: bytes) -> None:
        """Extract a tar made by ageval at `parent` (an existing directory)."""
        self._put(parent, data)

    def _put(self, parent: str, data: bytes) -> None:
        try:
            if not self._container.put_archive(parent, data):
                raise EnvironmentFailure("copy_failed", f"cannot copy files into {parent}")
        except docker.errors.APIError as exc:
            raise EnvironmentFailure("copy_failed", f"cannot copy into {parent}: {exc}") from None

    def get_directory(self, path: str, destination: Path) -> None:
        """Copy a container directory's content into `destination`. A file that a process
        still running in the container (an agent's daemon) truncates while the engine
        archives it cuts the archive short: the copy is then taken again with the container's
        processes frozen (`docker pause`), which nothing inside can outrun. The freezer itself
        can give up on processes that fork without pause (runc's "unable to freeze"): it is
        asked again, and if it never succeeds the copy is retried unfrozen."""
        self._copy_whole(path, lambda: self._copy_directory(path, destination))

    def get_directories(self, parent: str, destinations: Mapping[str, Path]) -> set[str]:
        """Copy subdirectories of `parent` (`{name: destination}`) as `get_directory` copies
        one, from one archive of `parent`: one engine copy instead of one per directory (each
        is a re-exec of the engine's binary, about 70 ms of CPU). The parent's other entries
        are read and dropped, so `parent` must hold little else: the attempt's own folder.
        Returns the names copied; one missing or not a directory is left to `get_directory`."""
        copied: set[str] = set()

        def copy() -> None:
            copied.clear()
            copied.update(self._copy_directories(parent, destinations))

        self._copy_whole(parent, copy)
        return copied

    def _copy_whole(self, path: str, copy: Callable[[], None]) -> None:
        try:
            copy()
            return
        except tarfile.ReadError as exc:
            cut = exc
        if self._pause():
            try:  # the next copy overwrites what the cut one wrote
                copy()
                return
            except tarfile.ReadError as exc:
                cut = exc
            finally:
                self._unpause()
        else:
            for _ in range(UNFROZEN_TRIES):
                try:
                    copy()
                    return
                except tarfile.ReadError as exc:
                    cut = exc
        raise EnvironmentFailure("copy_failed", f"cannot copy {path}: {cut}") from None

    def _pause(self) -> bool:
        """Freeze the container's processes; False when the freezer gave up every time or
        the engine will not pause it at all (it is not running, or paused already: then it is
        not this call's to unpause)."""
        for attempt in range(PAUSE_TRIES):
            if attempt:
                time.sleep(0.2 * attempt)
            try:
                self._container.pause()
                return True
            except docker.errors.APIError as exc:
                if FREEZER_GAVE_UP not in str(exc.explanation or exc):
                    return False
        return False

    def _unpause(self) -> None:
        """Thaw what `_pause` froze. An engine that will not is asked again; a container left
        frozen would hang every later step of its attempt until the wall time, so one that
        stays frozen is an infrastructure failure (`unpause_failed`) the attempt is retried
        for. A container gone, or no longer paused, is left as it is."""
        refusal: docker.errors.APIError | None = None
        for attempt in range(PAUSE_TRIES):
            if attempt:
                time.sleep(0.2 * attempt)
            try:
                self._container.unpause()
                return
            except docker.errors.NotFound:
                return
            except docker.errors.APIError as exc:
                if NOT_PAUSED in str(exc.explanation or exc):
                    return
                refusal = exc
        raise EnvironmentFailure(
            "unpause_failed", f"the engine left container {self.id} frozen: {refusal}"
        )

    def _copy_directory(self, path: str, destination: Path) -> None:
        try:
            chunks, _ = self._container.get_archive(path)
        except docker.errors.NotFound:
            destination.mkdir(parents=True, exist_ok=True)
            return
        except docker.errors.APIError as exc:
            raise EnvironmentFailure("copy_failed", f"cannot copy {path}: {exc}") from None
        extract_stream(chunks, destination, path.rstrip("/").rsplit("/", 1)[-1])

    def _copy_directories(self, parent: str, destinations: Mapping[str, Path]) -> set[str]:
        try:
            chunks, _ = self._container.get_archive(parent)
        except docker.errors.NotFound:
            return set()
        except docker.errors.APIError as exc:
            raise EnvironmentFailure("copy_failed", f"cannot copy {parent}: {exc}") from None
        return extract_split(chunks, parent.rstrip("/").rsplit("/", 1)[-1], destinations)

    def read_file(self, path: str, limit: int = OUTPUT_LIMIT) -> bytes | None:
        """A regular file's first `limit` bytes, or None when there is no such file. The
        archive is streamed and the transfer stops at the limit; to take a whole file of any
        size, use `copy_file`."""
        if limit < 0:
            raise ValueError("read_file needs a limit; copy_file takes a whole file")
        with self._open_file(path) as handle:
            return None if handle is None else handle.read(limit)

    def copy_file(
        self, path: str, target: Path, limit: int | None = None, *, root: Path | None = None
    ) -> bool:
        """Copy a regular file to `target` on the host in chunks (its first `limit` bytes when
        given); False when there is no such file. Memory use does not grow with its size.
        With `root`, no symlink between it and `target` is followed (`unsafe_path`)."""
        with self._open_file(path) as handle:
            if handle is None:
                return False
            if root is None:
                target.parent.mkdir(parents=True, exist_ok=True)
                out: BinaryIO = target.open("wb")
            else:
                out = open_inside(root, target)
            with out:
                copy_bounded(handle, out, limit)
            return True

    @contextlib.contextmanager
    def _open_file(self, path: str) -> Iterator[IO[bytes] | None]:
        """The file's content as a stream read from the container's archive (None when it is
        not a regular file); the transfer is closed when the block ends."""
        try:
            chunks, _ = self._container.get_archive(path, chunk_size=COPY_CHUNK)
        except docker.errors.NotFound:
            yield None
            return
        try:
            with tarfile.open(fileobj=ChunkReader(chunks), mode="r|") as archive:
                member = archive.next()
                if member is None or not member.isfile():
                    yield None
                else:
                    yield archive.extractfile(member)
        finally:
            chunks.close()

    def changes(self) -> list[dict[str, Any]]:
        """Filesystem changes since the container started (docker diff)."""
        return list(self._container.diff() or [])

    def commit(
        self,
        repository: str,
        *,
        blank: tuple[str, ...] = (),
        labels: dict[str, str] | None = None,
        pause: bool = True,
    ) -> tuple[str, str]:
        """Commit the container as an image named by its content, `repository:<id>` (two
        caches' attempts of one run key never share a name); `blank` names environment
        variables whose values must not be kept in the image. The image is labelled as made
        by this process (owner labels, see `owners`) plus `labels`. `pause` freezes the
        container's processes meanwhile (needless once they have stopped writing: it costs
        the engine a pause and an unpause). A commit unpaused that a process still writing cut
        short (a daemon the agent left running: the engine's tar of the container's layer
        found a file shorter than it said) is taken again paused. The container is frozen
        here, not by the engine's own pause: the engine commits unfrozen when its freezer gives
        up (runc's "unable to freeze", seen under load), saying nothing, and the commit can tear
        again; the freezer is asked again as a copy asks it (`_pause`), and a container it
        never freezes is committed again while its commits tear. The reference and the id."""
        changes = [f"ENV {name}=" for name in blank]
        conf = {"Labels": {**owner_labels(), **(labels or {})}}
        if blank:
            conf["Labels"][UNSET_LABEL] = " ".join(blank)
        api = self._container.client.api

        def take() -> Any:
            return api.commit(self.id, changes=changes or None, conf=conf, pause=False)

        made = None
        if not pause:
            try:
                made = take()
            except docker.errors.APIError as exc:
                if not torn_commit(exc):
                    raise
        if made is None:
            made = self._commit_frozen(take)
        image_id = str(made["Id"])
        tag = image_id.removeprefix("sha256:")[:32]
        api.tag(image_id, repository, tag=tag)
        return f"{repository}:{tag}", image_id

    def _commit_frozen(self, take: Callable[[], Any]) -> Any:
        if self._pause():
            try:
                return take()
            finally:
                self._unpause()
        tries = UNFROZEN_TRIES
        while True:
            try:
                return take()
            except docker.errors.APIError as exc:
                tries -= 1
                if not tries or not torn_commit(exc):
                    raise

    def unset_names(self) -> tuple[str, ...]:
        """The variables a commit blanked in this container's image (`UNSET_LABEL`): a
        process started here should not see them at all."""
        image = self.image
        if image is None:
            try:
                image = str(self._container.client.api.inspect_container(self.id)["Image"])
            except (docker.errors.DockerException, KeyError):
                return ()
        return image_unset_names(image) or ()

    def lost(self, grace: float = 0.0) -> bool:
        """Whether this container stopped or went from outside (`stopped_from_outside`). A
        process killed with its container can report before the engine marks the container
        stopped: a running container gets `grace` seconds to be seen stopped."""
        deadline = time.monotonic() + grace
        while self.running():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)
        return self.stopped_from_outside()

    def stopped_from_outside(self) -> bool:
        """Whether this (no longer running) container was removed, SIGKILLed or OOM-killed:
        nothing inside it can do that to its init (the kernel ignores a SIGKILL sent to a
        namespace's init from within), so it was the engine, the host or someone else; a
        container whose init exited otherwise was stopped from inside."""
        try:
            self._container.reload()
        except docker.errors.NotFound:
            return True
        state = self._container.attrs.get("State") or {}
        return bool(state.get("OOMKilled")) or state.get("ExitCode") == 137

    def running(self) -> bool:
        try:
            self._container.reload()
        except docker.errors.NotFound:
            return False
        return bool(self._container.status == "running")

    def remove(self) -> None:
        """Remove the container (and the one whose network namespace it joined)."""
        self._remove()
        if self.network_owner is not None:
            self.network_owner.remove()

    def _remove(self) -> None:
        try:  # with its anonymous volumes: an image's VOLUME makes one per container
            self._container.remove(force=True, v=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError:
            pass

    def remove_later(self) -> None:
        """`remove` in the background (see `in_background`); the container whose namespace
        it joined goes at the same time (nothing runs in it any more)."""
        in_background(self._remove_once_ended if self._ending else self._remove)
        if self.network_owner is not None:
            self.network_owner.remove_later()

    def _remove_once_ended(self) -> None:
        """Remove a container whose main process is ending by itself once it has: a forced
        removal would kill it, which the engine need not do."""
        with contextlib.suppress(Exception):  # gone already, or slow to end: removed anyway
            self._container.client.api.wait(self.id, timeout=ENDING_WAIT)
        self._remove()


TORN_COMMIT = "Error processing tar file"
"""How the engine answers a commit whose tar of the container's layer a writer cut short
(`archive/tar: missed writing N bytes` in its log, `unexpected EOF` to the client)."""


def torn_commit(exc: docker.errors.APIError) -> bool:
    """Whether a failed commit was cut short by a process still writing in the container."""
    return TORN_COMMIT in str(exc.explanation or exc)


def _attach(api: Any, container: str) -> Any:
    """A stream of the container's stdout and stderr, from its start (`logs`), as the SDK's
    `attach(stream=True, logs=True)` gives, without the inspect it makes to learn whether the
    container has a TTY: none of ageval's has."""
    params = {"logs": 1, "stdout": 1, "stderr": 1, "stream": 1}
    headers = {"Connection": "Upgrade", "Upgrade": "tcp"}
    url = api._url("/containers/{0}/attach", container)
    response = api._post(url, headers=headers, params=params, stream=True)
    return CancellableStream(api._read_from_socket(response, True, False), response)


def image_unset_names(image: str) -> tuple[str, ...] | None:
    """The variables a commit blanked in `image` (`UNSET_LABEL`); () when it has none or the
    engine cannot say; None when the engine has no such image."""
    try:
        labels = client().api.inspect_image(image).get("Config", {}).get("Labels") or {}
    except docker.errors.ImageNotFound:
        return None
    except (docker.errors.DockerException, EnvironmentFailure, AttributeError):
        return ()
    names = str(labels.get(UNSET_LABEL) or "").split()
    return tuple(name for name in names if ENV_NAME.fullmatch(name))


def _read_until(chunks: Iterable[bytes], until: bytes | None) -> tuple[bytes, bool]:
    """The last `OUTPUT_LIMIT` bytes of `chunks`, read to their end or, with `until`, to the
    end of the first line that starts with it (then True)."""
    if until is None:
        return bounded_tail(chunks, OUTPUT_LIMIT), False
    mark = b"\n" + until
    kept = bytearray()
    found = -1  # where the marked line starts in `kept`
    for chunk in chunks:
        start = max(0, len(kept) - len(mark))
        kept += chunk
        if found < 0:
            found = kept.find(mark, start)
        if found >= 0 and kept.find(b"\n", found + len(mark)) >= 0:
            return bytes(kept[-OUTPUT_LIMIT:]), True
        if len(kept) > 2 * OUTPUT_LIMIT:
            cut = len(kept) - OUTPUT_LIMIT
            del kept[:cut]
            found = -1 if found < cut else found - cut
    return bytes(kept[-OUTPUT_LIMIT:]), False


def bounded_tail(chunks: Iterable[bytes], limit: int) -> bytes:
    """The last `limit` bytes of a stream of chunks, holding at most about twice that."""
    kept = bytearray()
    for chunk in chunks:
        kept += chunk
        if len(kept) > 2 * limit:
            del kept[:-limit]
    return bytes(kept[-limit:]) if limit else b""


def copy_bounded(source: IO[bytes], target: IO[bytes], limit: int | None) -> None:
    """Copy `source` to `target` in chunks, stopping after `limit` bytes when given."""
    if limit is None:
        shutil.copyfileobj(source, target, COPY_CHUNK)
        return
    left = max(0, limit)
    while left and (chunk := source.read(min(COPY_CHUNK, left))):
        target.write(chunk)
        left -= len(chunk)


def _create(arguments: dict[str, Any]) -> Any:
    """`containers.create` without its inspect of the new container: create (the image
    pulled when the engine lacks it) and a model holding only the id (every method used here
    needs no more; `running` reloads it)."""
    engine = client()
    create = _create_container_args({**arguments, "version": engine.api._version})
    try:
        created = engine.api.create_container(**create)
    except docker.errors.ImageNotFound:
        engine.images.pull(arguments["image"], platform=arguments.get("platform"))
        created = engine.api.create_container(**create)
    container = engine.containers.prepare_model({"Id": created["Id"]})
    if _interrupted.is_set():  # made after Ctrl-C's listing, or while it ran: never started
        AttemptContainer(container).remove()
        raise EnvironmentFailure("interrupted", "the run was interrupted before it started")
    return container


def _start(container: Any) -> None:
    """Start a created container; one that cannot start is removed."""
    try:
        container.client.api.start(container.id)
    except BaseException:
        AttemptContainer(container).remove()
        raise


_removals: set[Future[Any]] = set()
_removals_lock = threading.Lock()
_session_removal_hooks: list[Callable[[], None]] = []
_interrupted = threading.Event()
"""Set by `interrupt_session`: no container of this process starts any more."""


_ROOT_USERS = ("", "root", "0", "root:root", "0:0")
_image_users: dict[str, bool] = {}


def _image_runs_as_root(image: str) -> bool:
    """Whether `image`'s configured user is root (asked once per image and process); False
    when the engine cannot say."""
    if image not in _image_users:
        try:
            user = client().api.inspect_image(image).get("Config", {}).get("User") or ""
        except (docker.errors.DockerException, EnvironmentFailure, AttributeError):
            return False
        _image_users[image] = str(user) in _ROOT_USERS
    return _image_users[image]


@cache
def _remover() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=REMOVERS, thread_name_prefix="ageval-remove")


def in_background(work: Callable[[], T]) -> Future[T]:
    """Run engine work in the background: a removal, for a caller done with what it removes
    and whose result does not depend on the removal (the engine's kill and teardown then
    overlap with the next step: scoring, the next attempt), or a start ahead of need (see
    `standby`); at most `REMOVERS` at once. `wait_for_removals` waits for all of them;
    `remove_session_containers` does so before it looks for leftovers, so a run leaves
    nothing behind."""
    with _removals_lock:
        future = _remover().submit(work)
        _removals.add(future)
    return future


def wait_for_removals() -> None:
    """Wait until all the work handed to `in_background` has ended (a failed removal leaves
    its container to `remove_session_containers` or to the owner sweep of a later run)."""
    with _removals_lock:
        pending = list(_removals)
        _removals.clear()
    wait(pending)


def _set_up(result: ExecResult, what: str) -> None:
    """A setup command's failure (`what` names it) is an environment failure."""
    if result.exit_code != 0:
        raise EnvironmentFailure(
            "environment_start_failed",
            f"{what} failed in the container (exit {result.exit_code})",
            hint=result.output.strip()[-500:] or None,
        )


EXIT_CODE_WAIT = 30.0
"""Seconds an ended exec's exit code is waited for before it counts as unknown (-1)."""


def exec_exit_code(api: Any, exec_id: str, wait: float = EXIT_CODE_WAIT) -> int:
    """The exit code of a finished exec. The engine records it a moment after the output
    ends: on a loaded machine, more than a second later (a second was the limit once, and a
    probe then read -1, not the 0 its command exited with). So it is asked every 20 ms for
    the first second (most codes come within tens of ms: a longer pause would lengthen every
    exec), then less and less often, for up to `wait` seconds; -1 when it never comes."""
    started = time.monotonic()
    pause = 0.02
    while True:
        state = api.exec_inspect(exec_id)
        if not state.get("Running") and state.get("ExitCode") is not None:
            return int(state["ExitCode"])
        elapsed = time.monotonic() - started
        if elapsed >= wait:
            return -1
        if elapsed >= 1.0:
            pause = min(pause * 2, 0.25)
        time.sleep(pause)


def find_container(container_id: str | None) -> AttemptContainer | None:
    """An existing container by id, or None."""
    if not container_id:
        return None
    try:
        return AttemptContainer(client().containers.get(container_id))
    except docker.errors.NotFound:
        return None
    except docker.errors.APIError as exc:
        raise EnvironmentFailure("docker_unavailable", f"docker failed: {exc}") from None


def remove_leftover_containers(attempt: str, keep: str | None) -> None:
    """Remove what an interrupted process left for this attempt: scoring containers, and an
    environment it created but had not recorded yet (killed between create and record);
    `keep` is the recorded environment, which a resume may re-attach."""
    _remove_labelled(f"{ATTEMPT_LABEL}={attempt}", keep=keep)


def join_session(session: str) -> None:
    """Label the containers this process starts from now on with `session` (a cluster worker
    takes its driver's, so the driver's Ctrl-C finds them on every machine)."""
    global SESSION
    SESSION = session


def on_session_removal(hook: Callable[[], None]) -> None:
    """Call `hook` whenever `remove_session_containers` is about to remove what is left (a
    holder of started containers forgets them)."""
    _session_removal_hooks.append(hook)


def interrupt_session() -> int:
    """After Ctrl-C: remove every container this process started, and start none from now on
    (one whose creation was in flight while they were listed is removed once made, before it
    starts: a worker thread would otherwise run its command to the end, and the process,
    which joins its threads, would wait for it). `reopen_session` lifts that."""
    _interrupted.set()
    return remove_session_containers()


def reopen_session() -> None:
    """Containers may start again (a new execution in a process that was interrupted)."""
    _interrupted.clear()


def remove_session_containers() -> int:
    """Remove every container this process started (after Ctrl-C or a crash, and at the end
    of a run), once the background work is done (what is queued and not yet started for
    later use is dropped first, by the hooks of `on_session_removal`)."""
    for hook in _session_removal_hooks:
        hook()
    wait_for_removals()
    try:
        return _remove_labelled(f"{LABEL}.session={SESSION}")
    except EnvironmentFailure:
        return 0


def _remove_labelled(label: str, keep: str | None = None) -> int:
    """Remove every container labelled `label` (but `keep`); how many were asked to go.

    One listing call and one removal per container: a container that goes away meanwhile
    (removed in the background, or by another process of the session: a cluster worker on
    this machine) is not an error, as it is for the SDK's `containers.list`, which inspects
    each container it lists."""
    engine = client().api
    listed = engine.containers(all=True, filters={"label": label})
    found = [item["Id"] for item in listed if item["Id"] != keep]
    for container in found:
        with contextlib.suppress(docker.errors.APIError):  # NotFound among them: gone
            engine.remove_container(container, force=True, v=True)
    return len(found)
