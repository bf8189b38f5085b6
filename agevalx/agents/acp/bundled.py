"""Agents that come as bundles (`agevalx.agents.bundles`): find the bundle, configure, launch.

For an entry naming a bundle (`options.entry: pi`), the executor:

1. finds the bundle in the container: mounted read-only at `/opt/ageval/agents/<name>` by the
   environment stage (its marker names the expected key), or, when it is not mounted, builds
   it on the host if needed and copies it into `<attempt>/.ageval/bundles/<id>/` for this
   invocation only (removed afterwards, so it never reaches the committed image);
2. writes the agent's configuration into the agent's HOME (for pi: `~/.pi/agent/models.json`
   and `settings.json`, built from the role's profile). The API key is never written: the
   configuration names the variable `AGEVAL_API_KEY`, which only the agent process has;
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

HOST_ALIAS = "host.docker.internal"
"""The host as attempt containers see it (`--add-host host.docker.internal:host-gateway`)."""

LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")

API_KEY_VARIABLE = "AGEVAL_API_KEY"
"""The variable holding the resolved key in the agent's environment (set by the run stage)."""

NO_KEY = "ageval-no-key"
"""What pi gets as key when the profile has none (local servers ignore it; pi needs one)."""

PI_PROVIDER = "ageval"
"""The provider id ageval writes into pi's models.json."""

PI_APIS = {
    None: "openai-completions",
    "chat": "openai-completions",
    "responses": "openai-responses",
}
PI_THINKING = ("off", "minimal", "low", "medium", "high", "xhigh", "max")

_WRITE_CONFIG = (
    'dir="$1"; shift; mkdir -p -- "$dir" || exit 1; '
    'while [ "$#" -ge 2 ]; do '
    'printf "%s" "$2" > "$dir/$1.tmp" && mv -f -- "$dir/$1.tmp" "$dir/$1" || exit 1; '
    "shift 2; done"
)

Cleanup = Callable[[], Awaitable[None]]


@dataclass
class AgentLaunch:
    """How to start the agent, and what to undo when the invocation ends."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cleanups: list[Cleanup] = field(default_factory=list)

    async def cleanup(self) -> None:
        for step in reversed(self.cleanups):
            await step()


async def bundled_launch(
    sandbox: Sandbox,
    invocation: Invocation,
    spec: bundles.BundleSpec,
    extra_args: list[str],
    recorder: Recorder,
) -> AgentLaunch:
    """Locate (or copy in) the bundle, write the agent's configuration, and say how to start."""
    started = time.monotonic()
    configure = CONFIGURATORS.get(spec.name)
    local = isinstance(sandbox, LocalSandbox)
    config = None if configure is None else configure(invocation, rewrite_local=not local)
    located = await _locate(sandbox, invocation, spec)
    argv, environment = bundles.launch_command(spec, located.root)
    launch = AgentLaunch([*argv, *extra_args], environment, located.cleanups)
    try:
        if config is not None:
            await _write_config(sandbox, *config)
    except BaseException:
        await launch.cleanup()
        raise
    recorder.transcript(
        {
            "type": "agent_setup",
            "bundle": spec.name,
            "key": located.key,
            "mode": located.mode,
            "seconds": round(time.monotonic() - started, 3),
        }
    )
    return launch


# --- finding the bundle ----------------------------------------------------------------------


@dataclass
class _Located:
    root: str
    """The bundle's folder as the sandbox sees it."""
    mode: str
    """`mounted`, `copied` or `host`."""
    key: str
    cleanups: list[Cleanup] = field(default_factory=list)


async def _locate(sandbox: Sandbox, invocation: Invocation, spec: bundles.BundleSpec) -> _Located:
    if isinstance(sandbox, LocalSandbox):
        bundle = await _ensure(spec)
        return _Located(str(bundle.path), "host", bundle.key)
    platform = await asyncio.to_thread(bundles.default_platform)
    key = bundles.bundle_key(spec, platform)
    mounted = bundles.mount_point(spec.name)
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


async def _ensure(spec: bundles.BundleSpec, platform: str | None = None) -> bundles.Bundle:
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


async def _write_config(sandbox: Sandbox, directory: str, files: Mapping[str, str]) -> None:
    """Write configuration files as the agent's user (so it owns its config folder)."""
    pairs = [part for name, text in sorted(files.items()) for part in (name, text)]
    result = await sandbox.run(["sh", "-c", _WRITE_CONFIG, "ageval-config", directory, *pairs])
    if result.returncode != 0:
        error = result.stderr.decode("utf-8", "replace").strip()
        raise AgentError("agent_config_failed", f"cannot write {directory}: {error}")


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


def pi_config(
    profile: Mapping[str, Any], environ: Mapping[str, str], *, rewrite_local: bool = True
) -> tuple[dict[str, Any], dict[str, Any]]:
    """pi's `models.json` and `settings.json` for a role's locked profile.

    Profile keys read: `base_url` (required), `model.id` (required), `model.api` (`chat` ->
    `openai-completions`, `responses` -> `openai-responses`), `model.reasoning.effort` (pi's
    startup thinking level), `model.extra` (pi `samplingParams`, merged into every request),
    `options.pi_model` / `options.pi_settings` (merged as-is into the model entry / settings).
    """
    model = dict(profile.get("model") or {})
    options = dict(profile.get("options") or {})
    base_url = profile.get("base_url") or environ.get("AGEVAL_BASE_URL")
    if not base_url:
        raise AgentError(
            "agent_base_url_missing",
            "pi needs the model endpoint: set base_url in the role's profile",
        )
    model_id = model.get("id") or environ.get("AGEVAL_MODEL")
    if not model_id:
        raise AgentError("agent_model_missing", "pi needs a model: set model.id in the profile")
    api = PI_APIS.get(model.get("api"))
    if api is None:
        raise AgentError("agent_options_invalid", f"model.api {model.get('api')!r} is unknown")
    entry: dict[str, Any] = {"id": model_id, "name": model_id}
    settings: dict[str, Any] = {
        "defaultProvider": PI_PROVIDER,
        "defaultModel": model_id,
        "quietStartup": True,
    }
    effort = (model.get("reasoning") or {}).get("effort")
    if effort is not None:
        level = "off" if effort == "none" else effort
        if level not in PI_THINKING:
            raise AgentError(
                "agent_options_invalid",
                f"pi has no thinking level {effort!r} (it knows {', '.join(PI_THINKING)})",
            )
        entry["reasoning"] = level != "off"
        settings["defaultThinkingLevel"] = level
    if model.get("extra"):
        entry["samplingParams"] = dict(model["extra"])
    entry.update(_mapping(options.get("pi_model"), "options.pi_model"))
    settings.update(_mapping(options.get("pi_settings"), "options.pi_settings"))
    provider = {
        "baseUrl": container_url(base_url) if rewrite_local else base_url,
        "api": api,
        "apiKey": f"${API_KEY_VARIABLE}" if environ.get(API_KEY_VARIABLE) else NO_KEY,
        "models": [entry],
    }
    return {"providers": {PI_PROVIDER: provider}}, settings


def _mapping(value: Any, name: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise AgentError("agent_options_invalid", f"{name} must be a mapping")
    return dict(value)


ConfigFiles = tuple[str, dict[str, str]]
"""A folder in the sandbox and the files (name -> text) to write there."""


def _pi_files(invocation: Invocation, *, rewrite_local: bool) -> ConfigFiles:
    models, settings = pi_config(
        invocation.profile, invocation.environ, rewrite_local=rewrite_local
    )
    directory = posixpath.join(invocation.container.home, ".pi", "agent")
    return directory, {"models.json": _json(models), "settings.json": _json(settings)}


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True) + "\n"


CONFIGURATORS: dict[str, Callable[..., ConfigFiles]] = {"pi": _pi_files}
"""Per bundle: the configuration to write before the agent starts."""
