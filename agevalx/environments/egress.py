"""`egress` of an attempt container: `none` (no network at all) and `llm` (a fence).

The fence of `egress: llm` is an internal Docker network created without an address on the
host side (`com.docker.network.bridge.inhibit_ipv4`), so the attempt container on it reaches
neither the host, nor other containers, nor the outside; and one proxy container on both that
network and the outside one (the job's `network`, else Docker's `bridge`). The proxy answers
the name `host.docker.internal` on the fence and relays the model gateway's port to the real
host, so agents reach the gateway as usual; and it is the container's HTTP(S) proxy, allowing
`CONNECT` (and plain HTTP) only to the allowed hostnames: the bound profiles' `base_url`
hosts and `egress_allow`. ACP runs over `docker exec`, which needs no network.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from docker.errors import DockerException

from agevalx.environments.engine import LABEL, EnvironmentFailure, client
from agevalx.environments.owners import made_labels, owner_labels, reap_networks

if TYPE_CHECKING:
    from agevalx.environments.container import ContainerSpec

PROXY_IMAGE = "ageval/base:bookworm"
"""The proxy runs this image's stock python3."""
PROXY_SCRIPT = Path(__file__).with_name("egress_proxy.py")
PROXY_PORT = 3128
PROXY_NAME = "ageval-egress-proxy"
"""The proxy's name on the fence network."""
HOST_ALIAS = "host.docker.internal"
INHIBIT_IPV4 = "com.docker.network.bridge.inhibit_ipv4"
READY_SECONDS = 20.0
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def allowed_hosts(base_urls: Iterable[str | None], egress_allow: Sequence[str]) -> list[str]:
    """The hostnames `egress: llm` lets out: the profiles' base_url hosts (a loopback one is
    the host's own, reached through the gateway instead) and `egress_allow`."""
    hosts = {urlsplit(url).hostname or "" for url in base_urls if url}
    hosts |= {name.strip().lower() for name in egress_allow if name.strip()}
    return sorted(host for host in hosts if host and host not in LOCAL_HOSTS)


@dataclass
class EgressFence:
    """A started fence: the network to put the attempt container on, and its proxy."""

    network: str
    proxy_id: str

    @property
    def environment(self) -> tuple[tuple[str, str], ...]:
        """The attempt container's proxy variables (the gateway is reached directly, and so
        is the container's own loopback: opencode's ACP server talks to its own HTTP server
        on 127.0.0.1, openclaw's to its gateway)."""
        proxy = f"http://{PROXY_NAME}:{PROXY_PORT}"
        direct = ",".join((HOST_ALIAS, *sorted(LOCAL_HOSTS)))
        values = {"HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "NO_PROXY": direct}
        return tuple((name, value) for key, value in values.items() for name in (key, key.lower()))

    def behind(self, spec: ContainerSpec) -> ContainerSpec:
        """`spec` on this fence's network only, with its proxy variables and no host alias."""
        return dataclasses.replace(
            spec,
            network=self.network,
            host_gateway=False,
            environment=(*spec.environment, *self.environment),
        )

    @classmethod
    def create(
        cls,
        allow: Sequence[str],
        *,
        gateway_port: int | None,
        outside: str | None = None,
        labels: dict[str, str] | None = None,
    ) -> EgressFence:
        """Create the network and start the proxy; a failure removes what was made."""
        name = f"ageval-egress-{uuid.uuid4().hex[:12]}"
        marks = {LABEL: "egress", **(labels or {}), **owner_labels()}
        engine = client()
        try:
            network = engine.networks.create(
                name, driver="bridge", internal=True, options={INHIBIT_IPV4: "true"}, labels=marks
            )
        except DockerException as exc:
            raise EnvironmentFailure(
                "environment_start_failed", f"cannot create the egress network: {exc}"
            ) from None
        fence = cls(network=name, proxy_id="")
        try:
            fence.proxy_id = _start_proxy(engine, allow, gateway_port, outside, marks)
            network.connect(fence.proxy_id, aliases=[PROXY_NAME, HOST_ALIAS])
            _wait_ready(engine, fence.proxy_id)
        except BaseException:
            fence.close()
            raise
        return fence

    def close(self) -> None:
        engine = client()
        if self.proxy_id:
            with contextlib.suppress(DockerException):
                engine.containers.get(self.proxy_id).remove(force=True, v=True)
        with contextlib.suppress(DockerException):
            engine.networks.get(self.network).remove()


def move_behind(container_id: str, fence: EgressFence) -> None:
    """Put a running container behind `fence` and on no other network (a resumed attempt's
    re-attached container); the networks it leaves are removed when their owner is dead."""
    engine = client()
    try:
        container = engine.containers.get(container_id)
        left = list((container.attrs.get("NetworkSettings") or {}).get("Networks") or {})
        for name in left:
            if name != fence.network:
                engine.networks.get(name).disconnect(container_id, force=True)
        if fence.network not in left:
            engine.networks.get(fence.network).connect(container_id)
    except DockerException as exc:
        raise EnvironmentFailure(
            "environment_start_failed", f"cannot put the container behind its fence: {exc}"
        ) from None
    reap_networks(name for name in left if name != fence.network)


def _start_proxy(
    engine: Any,
    allow: Sequence[str],
    gateway_port: int | None,
    outside: str | None,
    labels: dict[str, str],
) -> str:
    forwards = [] if gateway_port is None else [[gateway_port, HOST_ALIAS, gateway_port]]
    config = {"allow": list(allow), "proxy_port": PROXY_PORT, "forwards": forwards}
    try:
        container = engine.containers.run(
            PROXY_IMAGE,
            ["python3", "/ageval/egress_proxy.py", json.dumps(config)],
            detach=True,
            init=True,
            name=f"ageval-egress-proxy-{uuid.uuid4().hex[:8]}",
            network=outside or "bridge",
            extra_hosts={HOST_ALIAS: "host-gateway"},
            volumes={str(PROXY_SCRIPT): {"bind": "/ageval/egress_proxy.py", "mode": "ro"}},
            labels={**labels, **made_labels()},
        )
    except DockerException as exc:
        raise EnvironmentFailure(
            "environment_start_failed", f"cannot start the egress proxy: {exc}"
        ) from None
    return str(container.id)


def _wait_ready(engine: Any, container_id: str) -> None:
    deadline = time.monotonic() + READY_SECONDS
    container = engine.containers.get(container_id)
    while time.monotonic() < deadline:
        if b"ready" in container.logs():
            return
        container.reload()
        if container.status not in ("created", "running"):
            break
        time.sleep(0.05)
    logs = container.logs().decode("utf-8", "replace")[-500:]
    raise EnvironmentFailure("environment_start_failed", f"the egress proxy did not start: {logs}")
