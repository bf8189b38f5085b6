"""Agents that come as bundles (`agevalx.agents.bundles`): find the bundle, configure, launch.

For an entry naming an agent of the catalog (`options.entry: claude-code`), the executor:

1. finds the bundle in the container: mounted read-only at `/opt/ageval/agents/<name>` by the
   environment stage, which says so in `Container.bundles` (a container found again after a
   crash is asked for the bundle's marker, which names the key); or, when it is not mounted,
   builds it on the host if needed and copies it into `<attempt>/.ageval/bundles/<id>/` for
   this invocation only (removed afterwards, so it never reaches the committed image);
2. asks the agent's `configure` (`agevalx.agents.catalog`) for its configuration, given the
   model, the endpoint as the container reaches it, HOME and the bundle's folder, and writes
   its files into the agent's HOME as the agent's user. The API key is never written: it
   reaches the agent process only as variables, passed by name;
3. returns the command line and environment that start the agent.

A model server on the host given as `localhost` / `127.0.0.1` is rewritten to
`host.docker.internal` (attempt containers get that name for the host's bridge address).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import posixpath
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from agevalx.agents import bundles
from agevalx.agents.acp.recording import Recorder
from agevalx.agents.acp.sandbox import LocalSandbox, Sandbox, staging_dir
from agevalx.agents.base import AgentError, Invocation
from agevalx.agents.bundlespec import BundleSpec
from agevalx.agents.catalog.base import AgentDef, AgentSetup, provider_named

HOST_ALIAS = "host.docker.internal"
"""The host as attempt containers see it (`--add-host host.docker.internal:host-gateway`)."""

LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")

API_KEY_VARIABLE = "AGEVAL_API_KEY"
"""The variable holding the key (the gateway's token) in the agent's environment."""

_WRITE_CONFIG = (
    'while [ "$#" -ge 2 ]; do '
    'mkdir -p -- "${1%/*}" && printf "%s" "$2" > "$1.tmp" && mv -f -- "$1.tmp" "$1" || exit 1; '
    "shift 2; done"
)

Cleanup = Callable[[], Awaitable[None]]


@dataclass
class AgentLaunch:
    """How to start the agent, and what to undo when the invocation ends."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cleanups: list[Cleanup] = field(default_factory=list)
    key_variables: tuple[str, ...] = ()
    """Variables that receive the key (`AGEVAL_API_KEY`'s value), passed by name."""
    stop: str = "eof"
    """How to end the agent after its turn (`AgentDef.stop`): eof, term or kill."""
    handshake_seconds: float | None = None
    """The agent's own handshake timeout (`AgentDef.handshake_seconds`), when it needs longer."""

    async def cleanup(self) -> None:
        for step in reversed(self.cleanups):
            await step()


async def bundled_launch(
    sandbox: Sandbox,
    invocation: Invocation,
    agent: AgentDef,
    extra_args: list[str],
    recorder: Recorder,
) -> AgentLaunch:
    """Locate (or copy in) the bundle, write the agent's configuration, and say how to start."""
    started = time.monotonic()
    spec = agent.bundle
    local = isinstance(sandbox, LocalSandbox)
    located = await _locate(sandbox, invocation, spec)
    argv, environment = bundles.launch_command(spec, located.root)
    try:
        config = agent.configure(agent_setup(agent, invocation, located.root, local=local))
        await write_files(sandbox, invocation.container.home, config.files)
    except BaseException:
        for step in reversed(located.cleanups):
            await step()
        raise
    launch = AgentLaunch(
        [*argv, *config.args, *extra_args],
        {**environment, **config.env},
        located.cleanups,
        config.key_variables,
        stop=agent.stop,
        handshake_seconds=agent.handshake_seconds,
    )
    recorder.transcript(
        {
            "type": "agent_setup",
            "bundle": spec.name,
            "key": located.key,
            "mode": located.mode,
            "seconds": round(time.monotonic() - started, 3),
            "ready_at": round(time.time(), 3),
        }
    )
    return launch


def agent_setup(
    agent: AgentDef, invocation: Invocation, root: str, *, local: bool = False
) -> AgentSetup:
    """What the agent's configurator is told: model, provider, endpoint, folders."""
    profile = invocation.profile
    environ = invocation.environ
    options = profile.get("options") or {}
    name = options.get("provider") or agent.providers[0]
    provider = provider_named(str(name))
    if provider is None or provider.name not in agent.providers:
        raise AgentError(
            "agent_provider_unsupported",
            f"{agent.name} cannot talk to the provider {name!r} (it talks to: "
            f"{', '.join(agent.providers)})",
        )
    base_url = profile.get("base_url") or environ.get("AGEVAL_BASE_URL")
    if not base_url:
        raise AgentError(
            "agent_base_url_missing",
            f"{agent.name} needs the model endpoint: set base_url in the role's profile",
        )
    model = (profile.get("model") or {}).get("id") or environ.get("AGEVAL_MODEL")
    if not model:
        raise AgentError(
            "agent_model_missing", f"{agent.name} needs a model: set model.id in the profile"
        )
    container = invocation.container
    return AgentSetup(
        model=str(model),
        provider=provider,
        api=agent.api(provider),
        base_url=base_url if local else container_url(base_url),
        has_key=bool(environ.get(API_KEY_VARIABLE)),
        home=container.home,
        workdir=container.workdir,
        root=root,
        profile=profile,
    )


# --- finding the bundle ----------------------------------------------------------------------


@dataclass
class _Located:
    root: str
    """The bundle's folder as the sandbox sees it."""
    mode: str
    """`mounted`, `copied` or `host`."""
    key: str
    cleanups: list[Cleanup] = field(default_factory=list)


async def _locate(sandbox: Sandbox, invocation: Invocation, spec: BundleSpec) -> _Located:
    if isinstance(sandbox, LocalSandbox):
        bundle = await _ensure(spec)
        return _Located(str(bundle.path), "host", bundle.key)
    platform = await asyncio.to_thread(bundles.default_platform)
    key = bundles.bundle_key(spec, platform)
    mounted = bundles.mount_point(spec.name)
    known = invocation.container.bundles
    if known.get(spec.name) == key:  # the run stage mounted it: no exec asks
        return _Located(mounted, "mounted", key)
    if not known:  # not known (a container found again): its marker says
        marker = await sandbox.run(["cat", posixpath.join(mounted, bundles.MARKER)])
        if marker.returncode == 0 and _marker_key(marker.stdout) == key:
            return _Located(mounted, "mounted", key)
    bundle = await _ensure(spec, platform)
    parent = posixpath.join(staging_dir(invocation.container, "bundles"), uuid.uuid4().hex[:12])
    copier = _Copier(invocation.container.id, parent)
    located = _Located(posixpath.join(parent, spec.name), "copied", key, [copier.remove])
    try:
        await asyncio.to_thread(copier.copy, bundle)
    except BaseException:
        await copier.remove()
        raise
    return located


async def _ensure(spec: BundleSpec, platform: str | None = None) -> bundles.Bundle:
    try:
        return await asyncio.to_thread(bundles.ensure_bundle, spec.name, platform=platform)
    except bundles.BundleError as exc:
        message = f"cannot build the {spec.name} bundle: {exc.message}"
        raise AgentError("agent_bundle_failed", message, exc.hint or "") from None


def _marker_key(data: bytes) -> str | None:
    try:
        value = json.loads(data)
    except ValueError:
        return None
    key = value.get("key") if isinstance(value, dict) else None
    return key if isinstance(key, str) else None


class _Copier:
    """Copies a bundle into a container (as root, from its cached tar) and removes it again."""

    def __init__(self, container_id: str, parent: str) -> None:
        self._container_id = container_id
        self._parent = parent
        self._container: Any = None

    def copy(self, bundle: bundles.Bundle) -> None:
        try:
            archive = bundles.bundle_archive(bundle)
            self._root(["mkdir", "-p", self._parent])
            with archive.open("rb") as handle:
                accepted = self._docker().put_archive(self._parent, handle)
        except AgentError:
            raise
        except Exception as exc:  # docker SDK and OS errors alike: the copy failed
            raise AgentError(
                "sandbox_copy_failed", f"cannot copy the bundle into {self._parent}: {exc}"
            ) from None
        if not accepted:
            raise AgentError("sandbox_copy_failed", f"docker refused the copy into {self._parent}")

    async def remove(self) -> None:
        """Best effort: a leftover copy costs image space, not correctness."""
        with contextlib.suppress(Exception):
            await asyncio.to_thread(self._root, ["rm", "-rf", "--", self._parent])

    def _docker(self) -> Any:
        if self._container is None:
            import docker

            self._container = docker.from_env().containers.get(self._container_id)
        return self._container

    def _root(self, argv: list[str]) -> None:
        result = self._docker().exec_run(argv, user="root")
        if result.exit_code != 0:
            output = (result.output or b"").decode("utf-8", "replace").strip()
            raise AgentError("sandbox_copy_failed", f"{argv[0]} failed in the container: {output}")


# --- configuration ---------------------------------------------------------------------------


async def write_files(sandbox: Sandbox, home: str, files: Mapping[str, str]) -> None:
    """Write an agent's configuration files as the agent's user (so it owns them); each
    must lie under its HOME."""
    if not files:
        return
    pairs: list[str] = []
    for path, text in sorted(files.items()):
        normal = posixpath.normpath(path)
        if not normal.startswith(home.rstrip("/") + "/"):
            raise AgentError("agent_config_failed", f"{path} is not under the agent's HOME")
        pairs += [normal, text]
    result = await sandbox.run(["sh", "-c", _WRITE_CONFIG, "ageval-config", *pairs])
    if result.returncode != 0:
        error = result.stderr.decode("utf-8", "replace").strip()
        raise AgentError("agent_config_failed", f"cannot write the agent's files: {error}")


def container_url(url: str) -> str:
    """`url` with a loopback host replaced by `host.docker.internal` (port and path kept)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if host not in LOCAL_HOSTS:
        return url
    netloc = HOST_ALIAS if parts.port is None else f"{HOST_ALIAS}:{parts.port}"
    if parts.username or parts.password:
        netloc = parts.netloc.rsplit("@", 1)[0] + "@" + netloc
    return urlunsplit(parts._replace(netloc=netloc))
