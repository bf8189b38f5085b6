"""Network namespaces on standby for the scoring containers that join them.

Most of a container's start is its network namespace (bench_attempt: a container that joins
another's namespace starts in about half the time). An attempt's scoring container can only be
created once its run has ended (it is a container of the run's committed image), but a
namespace on its network can be ready by then: each run stage says that an evaluation on that
network will follow (`Standby.expect`), and a placeholder container is started in the
background, idle; the evaluation's container then starts in its namespace (`network_mode:
container:<placeholder>`) instead of making its own (`Standby.take`).

Only the network namespace is shared, and with one container only: a placeholder serves one
scoring container and is removed right after it (`AttemptContainer.remove`), so nothing one
evaluation did to its network (a listening socket, /etc/hosts) is seen by another. Everything
else of the scoring container (image, mounts, /tmp, user, GPUs, variables) is set when the
evaluation starts it, as before. A placeholder runs only `sleep` of ageval's own base image
(never the task image, whose entrypoint could listen in the namespace); it is labelled like
every container (session, owner), so Ctrl-C and the orphan sweep remove it, and its start is
background engine work, which `remove_session_containers` waits for before it removes what the
session started.

At most `STANDBY` placeholders per network are kept, and never more than the evaluations
expected (a run that fails withdraws its own). A placeholder hides a namespace's start only
when the engine has CPU to spare: a process running more attempts at once than half the
machine's cores starts none (`Standby.size_for`), since there it is one more container to
create, start and remove on a saturated engine (bench_floor on 2 cores: serial, 1.22 s per
attempt with placeholders and 1.31 s without; at 4, 0.97 s with and 0.78 s without). Nor does
a process that finds other ageval processes' containers running on the engine as it starts
its attempts: the engine is shared, and a placeholder costs its CPU more than it saves (0.26
CPU-seconds to make, start and remove one on 2 cores; joining its namespace saves the scoring
container 0.10). `AGEVAL_STANDBY=on` or `off` overrides the choice.

An evaluation finding none ready (a re-score from the cache, a network behind an egress
fence, a placeholder still queued, placeholders off) starts its container as before.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from functools import cache

from agevalx.environments.container import (
    AttemptContainer,
    ContainerSpec,
    in_background,
    on_session_removal,
)
from agevalx.environments.engine import LABEL, EnvironmentFailure, image_exists
from agevalx.errors import UsageError

IMAGE = "ageval/base:bookworm"
"""What placeholders run (ageval's offline base image); without it, no standby."""
STANDBY = 4
"""Placeholders kept ready per network, at most."""
SETTING = "AGEVAL_STANDBY"
"""`on`: placeholders whatever the load; `off`: none; unset or `auto`: `Standby.size_for`."""
SETTINGS = ("auto", "on", "off")

Placeholder = Future[AttemptContainer | None]


@dataclass(frozen=True)
class Network:
    """What a namespace is made for."""

    name: str | None
    """The Docker network (None: the engine's default; `none`: no network)."""
    host_gateway: bool
    """`host.docker.internal` is mapped to the host in its /etc/hosts."""

    @classmethod
    def of(cls, spec: ContainerSpec) -> Network | None:
        """The namespace `spec` asks for; None when it joins another's already."""
        if spec.network_mode is not None:
            return None
        return cls(spec.network, spec.host_gateway and spec.network != "none")


def joined(spec: ContainerSpec, placeholder: AttemptContainer) -> ContainerSpec:
    """`spec` in the network namespace of `placeholder` (its /etc/hosts included)."""
    return dataclasses.replace(spec, network=None, network_mode=f"container:{placeholder.id}")


def start_placeholder(network: Network) -> AttemptContainer | None:
    """An idle container holding a namespace on `network`; None when it cannot be had."""
    if not image_exists(IMAGE):
        return None
    spec = ContainerSpec(
        image=IMAGE,
        name_hint="eval-network",
        network=network.name,
        host_gateway=network.host_gateway,
        labels=((LABEL, "scoring-network"),),
        attempt_dirs=False,
    )
    try:
        return AttemptContainer.start(spec)
    except EnvironmentFailure:
        return None


class Standby:
    """The process's placeholders by network, and the evaluations expected on each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._expected: collections.Counter[Network] = collections.Counter()
        self._ready: dict[Network, collections.deque[Placeholder]] = {}
        self.enabled = True
        """False: `expect` starts nothing, and evaluations start their own namespaces."""

    def size_for(self, concurrent: int, cores: int | None = None, others: int = 0) -> None:
        """Start placeholders only while at most half the cores' worth of attempts run at
        once (`concurrent`), at least one, and no other ageval process has containers
        running on the engine (`others`, see `owners.other_owners`): module docstring.
        `$AGEVAL_STANDBY` (`SETTING`) set to `on` or `off` decides instead."""
        setting = os.environ.get(SETTING) or "auto"
        if setting not in SETTINGS:
            raise UsageError(
                "invalid_standby_setting",
                f"{SETTING}={setting!r} is not one of {', '.join(SETTINGS)}",
                field=SETTING,
                hint=f"unset it (auto), or set {SETTING}=on or {SETTING}=off",
            )
        half = max(1, (cores or os.cpu_count() or 1) // 2)
        self.enabled = setting == "on" or (setting == "auto" and concurrent <= half and not others)

    def expect(self, network: Network) -> None:
        """An evaluation on `network` will follow: start a placeholder for it, unless
        `STANDBY` are ready already or placeholders are off."""
        if not self.enabled:
            return
        with self._lock:
            self._expected[network] += 1
            self._fill(network)

    def withdraw(self, network: Network) -> None:
        """An expected evaluation will not follow (its run failed)."""
        with self._lock:
            self._expected[network] = max(0, self._expected[network] - 1)
            self._trim(network)

    def take(self, network: Network) -> AttemptContainer | None:
        """A started placeholder on `network` for an evaluation's container (removed with
        it: see `AttemptContainer.remove`), or None when none has started yet; a next one is
        started for the evaluations still expected."""
        with self._lock:
            self._expected[network] = max(0, self._expected[network] - 1)
            queue = self._ready.get(network, collections.deque())
            chosen = next((item for item in queue if item.done()), None)
            chosen = chosen or next((item for item in queue if item.running()), None)
            if chosen is not None:
                queue.remove(chosen)
            self._fill(network)
            self._trim(network)
        if chosen is None:
            return None
        return chosen.result()  # a running start is well under way: wait for it

    def forget(self) -> None:
        """Drop every placeholder (`remove_session_containers` removes the started ones)."""
        with self._lock:
            for queue in self._ready.values():
                for item in queue:
                    item.cancel()
            self._ready.clear()
            self._expected.clear()

    def _fill(self, network: Network) -> None:
        queue = self._ready.setdefault(network, collections.deque())
        while len(queue) < min(self._expected[network], STANDBY):
            queue.append(in_background(lambda: start_placeholder(network)))

    def _trim(self, network: Network) -> None:
        queue = self._ready.setdefault(network, collections.deque())
        while len(queue) > min(self._expected[network], STANDBY):
            _discard(queue.pop())


def _discard(item: Placeholder) -> None:
    if item.cancel():
        return
    item.add_done_callback(_remove_started)


def _remove_started(item: Placeholder) -> None:
    placeholder = None if item.cancelled() or item.exception() else item.result()
    if placeholder is not None:
        placeholder.remove_later()


@cache
def standby() -> Standby:
    """The process's standby namespaces (forgotten when its session's containers go)."""
    pool = Standby()
    on_session_removal(pool.forget)
    return pool
