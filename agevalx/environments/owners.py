"""Who owns what ageval starts in Docker, and reaping what dead owners left behind.

Every container, compose service, network and volume ageval starts, and every image it makes,
carries owner labels naming the process that made it: its host (name and machine id), its pid
and its start identity (the boot id and the start time in clock ticks from `/proc/<pid>/stat`),
so a pid the kernel has handed to another process since is not taken for the owner. A process
killed with SIGKILL cleans nothing up; the next `ageval run` or `ageval replay` on the same host
removes what it left (`reap_orphans`). Objects of a live owner (another ageval running right
now) and of other hosts (an engine shared through `DOCKER_HOST`) are never touched.

`$AGEVAL_OWNER_SCOPE` (unset: the empty scope) names a scope that goes into the owner labels;
a reaping takes only the dead owners of its own scope. Runs that share a host but must never
reap each other's leftovers (the test suite's workers, say, one of which kills ageval and
resumes it while another runs) each get a scope of their own.

A resumed attempt re-attaches the container of the process that died; while it uses it, it
holds an adoption marker (a labelled Docker volume naming the container, owned by the resuming
process), so that reapers leave the container alone.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import docker
from pydantic import BaseModel, ConfigDict

from agevalx.environments.engine import LABEL, EnvironmentFailure, client
from agevalx.errors import UsageError

OWNER_HOST = f"{LABEL}.owner.host"
OWNER_MACHINE = f"{LABEL}.owner.machine"
OWNER_PID = f"{LABEL}.owner.pid"
OWNER_START = f"{LABEL}.owner.start"
OWNER_SCOPE = f"{LABEL}.owner.scope"
"""Set only when the owner ran under a scope (`SCOPE_ENV`)."""
SCOPE_ENV = "AGEVAL_OWNER_SCOPE"
SCOPE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
OWNER_MADE = f"{LABEL}.owner.made"
"""A nonce ageval sets on each container (and compose project) it creates. An image keeps the
labels of what it was made from, so a container a user starts by hand from an ageval image
inherits the image's owner labels, naming a process that is long gone; it never has a nonce
of its own, different from its image's, and so is never taken for ageval's."""
ADOPTS = f"{LABEL}.adopts"
"""Label of an adoption marker: the id of the container a live process took over."""


@dataclass(frozen=True)
class Owner:
    """A process on a host: what the owner labels say."""

    host: str
    pid: int
    start: str
    """`<boot id>:<start ticks>` of the process ("" where /proc is not available)."""
    machine: str = ""
    """The host's machine id (/etc/machine-id; "" when it has none): two machines that share
    an engine and a host name are still told apart."""
    scope: str = ""
    """The owner's `$AGEVAL_OWNER_SCOPE` ("": none)."""

    def labels(self) -> dict[str, str]:
        labels = {
            OWNER_HOST: self.host,
            OWNER_MACHINE: self.machine,
            OWNER_PID: str(self.pid),
            OWNER_START: self.start,
        }
        if self.scope:
            labels[OWNER_SCOPE] = self.scope
        return labels

    @property
    def here(self) -> bool:
        """Whether it ran on this host, where its pid can be checked."""
        if self.host != socket.gethostname():
            return False
        return not (self.machine and machine_id()) or self.machine == machine_id()

    @classmethod
    def from_labels(cls, labels: Mapping[str, str] | None) -> Owner | None:
        """The owner an object's labels name; None when they name none (or a malformed one)."""
        labels = labels or {}
        pid = labels.get(OWNER_PID, "")
        if OWNER_HOST not in labels or not pid.isdigit():
            return None
        return cls(
            host=labels[OWNER_HOST],
            pid=int(pid),
            start=labels.get(OWNER_START, ""),
            machine=labels.get(OWNER_MACHINE, ""),
            scope=labels.get(OWNER_SCOPE, ""),
        )


def process_start(pid: int) -> str | None:
    """`<boot id>:<start ticks>` of a running process; None when there is no such process.

    "" when this system has no /proc (the start cannot be told; the pid alone is used)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        return "" if not Path("/proc/self/stat").exists() else None
    except OSError:
        return None
    # Field 22 (starttime); the command name (field 2) is in parentheses and may hold spaces.
    fields = stat[stat.rfind(")") + 2 :].split()
    if len(fields) < 20 or fields[0] in ("Z", "X"):  # a zombie has ended: it is not alive
        return None
    return f"{_boot_id()}:{fields[19]}"


@cache
def machine_id() -> str:
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        with contextlib.suppress(OSError):
            return Path(path).read_text(encoding="ascii").strip()
    return ""


@cache
def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        return ""


def this_process() -> Owner:
    """The owner identity of this process, in its scope."""
    return _owner_of(os.getpid(), owner_scope())


def owner_scope() -> str:
    """`$AGEVAL_OWNER_SCOPE` ("" when unset or empty); a malformed one is a usage error."""
    scope = os.environ.get(SCOPE_ENV, "")
    if scope and not SCOPE_RE.fullmatch(scope):
        raise UsageError(
            "invalid_owner_scope",
            f"{SCOPE_ENV}={scope[:80]!r} is not a scope name",
            field=SCOPE_ENV,
            hint="use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or "
            "digit, or leave it unset",
        )
    return scope


@cache
def _owner_of(pid: int, scope: str) -> Owner:
    return Owner(
        host=socket.gethostname(),
        pid=pid,
        start=process_start(pid) or "",
        machine=machine_id(),
        scope=scope,
    )


def owner_labels() -> dict[str, str]:
    """The labels naming this process as the owner."""
    return this_process().labels()


def made_labels() -> dict[str, str]:
    """The labels of a container ageval creates now: this process as the owner, and a fresh
    `OWNER_MADE` nonce."""
    return {**owner_labels(), OWNER_MADE: uuid.uuid4().hex}


def is_alive(owner: Owner) -> bool:
    """Whether `owner` still runs. Owners on other hosts cannot be checked: they count as
    alive, so nothing of theirs is ever removed."""
    if not owner.here:
        return True
    if owner.pid == os.getpid():
        return owner.start == this_process().start
    current = process_start(owner.pid)
    if current is None:
        return False
    if current and owner.start:
        return current == owner.start
    try:  # no start identity to compare: the pid alone decides
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def dead_here(labels: Mapping[str, str] | None) -> bool:
    """True for an object whose owner ran on this host, in this process's scope, and no longer
    runs. Another scope's dead owners are left to a reaper of that scope."""
    owner = Owner.from_labels(labels)
    return (
        owner is not None
        and owner.here
        and owner.scope == this_process().scope
        and not is_alive(owner)
    )


class ReapReport(BaseModel):
    """What one reaping removed."""

    model_config = ConfigDict(extra="forbid")

    containers: list[str] = []
    """Names of the containers removed."""
    networks: list[str] = []
    """Names of the networks removed."""
    volumes: list[str] = []
    """Names of the volumes removed (compose volumes, stale adoption markers)."""
    owners: list[int] = []
    """Pids of the dead processes they belonged to."""

    @property
    def removed(self) -> int:
        return len(self.containers) + len(self.networks) + len(self.volumes)


def other_owners() -> int:
    """How many other ageval processes (of any host) have containers running on the engine
    now: an engine shared with them has less CPU to spare. 0 when the engine cannot be
    asked (the command fails on its own where it needs it)."""
    me = this_process()
    try:
        running = client().api.containers(filters={"label": OWNER_PID, "status": "running"})
    except (EnvironmentFailure, docker.errors.DockerException, OSError):
        return 0
    owners = {Owner.from_labels(found.get("Labels")) for found in running}
    return len(owners - {me, None})


def reap_orphans() -> ReapReport:
    """Remove the containers, networks and volumes of ageval processes of this host that died.

    Nothing is done (an empty report) when the Docker engine cannot be reached: the command
    that called this fails on its own, with its own error, where it needs the engine."""
    report = ReapReport()
    this_process()  # a malformed $AGEVAL_OWNER_SCOPE is refused here, whatever the engine holds
    try:
        engine = client()
        host = [f"{OWNER_HOST}={socket.gethostname()}"]
        containers = engine.api.containers(all=True, filters={"label": host})
        volumes = engine.api.volumes(filters={"label": host}).get("Volumes") or []
        spared = _adopted(volumes)
        image_nonces: dict[str, str | None] = {}
        for found in containers:
            if found["Id"] in spared or not dead_here(found.get("Labels")):
                continue
            if not _made_by_ageval(engine, found, image_nonces):
                continue
            with _unless_gone():
                engine.api.remove_container(found["Id"], force=True, v=True)
                report.containers.append(_container_name(found))
                _note_owner(report, found.get("Labels"))
        for network in engine.api.networks(filters={"label": host}):
            if dead_here(network.get("Labels")):
                with _unless_gone():
                    engine.api.remove_network(network["Id"])
                    report.networks.append(network["Name"])
                    _note_owner(report, network.get("Labels"))
        for volume in volumes:
            if dead_here(volume.get("Labels")):
                with _unless_gone():
                    engine.api.remove_volume(volume["Name"], force=True)
                    report.volumes.append(volume["Name"])
                    _note_owner(report, volume.get("Labels"))
    except EnvironmentFailure:
        return report
    except (docker.errors.DockerException, OSError):
        return report
    return report


def reap_networks(names: Iterable[str]) -> list[str]:
    """Remove the networks among `names` whose owner died on this host (say an egress fence
    network a re-attached container just left, which the reaping before could not remove
    while that container was on it); the names of those removed."""
    removed = []
    try:
        engine = client()
        for name in names:
            with _unless_gone():
                network = engine.api.inspect_network(name)
                if dead_here(network.get("Labels")):
                    engine.api.remove_network(network["Id"])
                    removed.append(str(network["Name"]))
    except (EnvironmentFailure, docker.errors.DockerException, OSError):
        pass
    return removed


def _made_by_ageval(
    engine: Any, found: dict[str, Any], image_nonces: dict[str, str | None]
) -> bool:
    """Whether ageval created this container: it has an `OWNER_MADE` nonce that its image
    does not (a container started from an image inherits the image's labels)."""
    nonce = (found.get("Labels") or {}).get(OWNER_MADE)
    if not nonce:
        return False
    image = str(found.get("ImageID") or "")
    if image not in image_nonces:
        try:
            labels = engine.api.inspect_image(image)["Config"].get("Labels") or {}
            image_nonces[image] = labels.get(OWNER_MADE)
        except (docker.errors.DockerException, KeyError, TypeError):
            image_nonces[image] = None  # its image is gone: nothing can be inherited from it
    return bool(nonce != image_nonces[image])


def _adopted(volumes: list[dict[str, Any]]) -> set[str]:
    """Ids of the containers that live processes hold adoption markers for."""
    return {
        labels[ADOPTS]
        for labels in (volume.get("Labels") or {} for volume in volumes)
        if ADOPTS in labels and not dead_here(labels)
    }


def _container_name(found: dict[str, Any]) -> str:
    names = found.get("Names") or []
    return str(names[0]).lstrip("/") if names else str(found["Id"])[:12]


def _note_owner(report: ReapReport, labels: Mapping[str, str] | None) -> None:
    owner = Owner.from_labels(labels)
    if owner is not None and owner.pid not in report.owners:
        report.owners.append(owner.pid)


@contextlib.contextmanager
def _unless_gone() -> Iterator[None]:
    """Another reaper (or the owner's own cleanup) may have removed it a moment ago; an object
    still in use (a network a live container joined) is left for a later reaping."""
    try:
        yield
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError:
        pass


@contextlib.contextmanager
def adopting(container_id: str | None) -> Iterator[None]:
    """Hold an adoption marker for `container_id` (a dead process's container that this one is
    about to re-attach) while the block runs; reapers leave the container alone meanwhile.

    The marker is created before any reaping of this process, so neither this process nor a
    concurrent one removes the container under it."""
    if not container_id:
        yield
        return
    name = f"ageval-adopt-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    labels = {LABEL: "adoption", ADOPTS: container_id, **owner_labels()}
    try:
        client().api.create_volume(name=name, labels=labels)
    except (EnvironmentFailure, docker.errors.DockerException, OSError):
        yield  # no engine: nothing to re-attach either
        return
    try:
        yield
    finally:
        with contextlib.suppress(docker.errors.DockerException, OSError):
            client().api.remove_volume(name, force=True)
