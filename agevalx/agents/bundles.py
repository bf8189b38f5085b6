"""Agent bundles: agents that are not in the task image, built once on the host and mounted.

An ACP agent such as pi is a Node program; task images do not carry Node. Rather than install
it in every attempt, ageval builds a *bundle* once per machine: `npm install --omit=dev` of the
agent's packages plus a Node binary from the npm registry (`node-linux-<arch>`), in a
directory named by the digest of the bundle's spec, under the cache directory:

    <cache>/bundles/<key>/                 the bundle (read-only once published)
      .ageval-bundle.json                  its spec, key and size: present only when complete
      package.json, package-lock.json      what npm resolved
      bin/<name>                           wrapper scripts that run a CLI with the bundled Node
      node_modules/...
    <cache>/bundles/<key>.tar              the same tree as a tar, made on demand (copy mode)

A build happens in a temporary sibling folder and is published with one `rename`, under a
per-key file lock, so concurrent builders (threads or processes) wait for one build and
reuse it. `AGEVAL_BUNDLES_DIR` moves the bundles elsewhere (tests share one across runs).

In an attempt container the bundle lives at `mount_point(name)` (`/opt/ageval/agents/<name>`),
bind-mounted read-only; its entry command and environment come from `launch_command`.
Nothing in a bundle depends on where it is mounted: wrappers find their files relative to
themselves, so the same tree also works when copied into a container.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import importlib
import json
import os
import platform as host_platform
import posixpath
import shutil
import subprocess
import tarfile
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agevalx.agents.bundlespec import BundleSpec
from agevalx.cache.location import default_cache_dir
from agevalx.errors import AgevalError
from agevalx.hashing import digest_json

BUNDLES_ENV = "AGEVAL_BUNDLES_DIR"
"""Overrides where bundles live (default: `<cache dir>/bundles`)."""

NPM_ENV = "AGEVAL_NPM"
"""The npm program to build with (default: `npm` on PATH)."""

MOUNT_ROOT = "/opt/ageval/agents"
"""Where bundles appear in attempt containers: `<MOUNT_ROOT>/<name>`."""

MARKER = ".ageval-bundle.json"
"""Written last into a bundle: its presence means the bundle is complete."""

BUILD_TIMEOUT = 1800.0
"""Seconds `npm install` may take."""

NODE_PACKAGE = "node-linux-{arch}"
"""The npm package holding the Node binary for a platform (`bin/node`)."""

NPM_QUIET = {
    "npm_config_update_notifier": "false",
    "npm_config_fund": "false",
    "npm_config_audit": "false",
    "npm_config_loglevel": "warn",
}


class BundleError(AgevalError):
    """A bundle cannot be built or used."""


def known_bundles() -> dict[str, BundleSpec]:
    """Known bundles by name (= profile entry): every agent of the catalog, and the tools
    formats' own agents use in the container (`formats.format_tool_bundles`)."""
    from agevalx.agents import catalog
    from agevalx.formats.agent_registry import format_tool_bundles

    return {
        **format_tool_bundles(),
        **{name: agent.bundle for name, agent in catalog.agents().items()},
    }


def bundle_spec(name: str) -> BundleSpec | None:
    """The spec of a known bundle, or None."""
    return known_bundles().get(name)


def mount_point(name: str) -> str:
    """Where the bundle `name` is mounted in attempt containers."""
    return posixpath.join(MOUNT_ROOT, name)


def node_path(root: str) -> str:
    """The bundled Node binary, for a bundle at `root` (container path)."""
    return posixpath.join(root, "node")


def launch_command(spec: BundleSpec, root: str) -> tuple[list[str], dict[str, str]]:
    """The agent's argv and environment for a bundle at `root` (a container path)."""
    program = [posixpath.join(root, spec.interpreter)] if spec.interpreter else []
    argv = [*program, posixpath.join(root, spec.entry), *spec.arguments]
    environment = {name: value.replace("{root}", root) for name, value in spec.environment}
    return argv, environment


# --- where and which -------------------------------------------------------------------------


def bundles_dir(cache_dir: Path | None = None) -> Path:
    """`$AGEVAL_BUNDLES_DIR`, else `<cache_dir>/bundles` (cache_dir: the default cache)."""
    explicit = os.environ.get(BUNDLES_ENV)
    if explicit:
        return Path(explicit).expanduser().absolute()
    return (cache_dir or default_cache_dir()) / "bundles"


_ARCHES = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}


@functools.cache
def default_platform() -> str:
    """`linux-<arch>` of the Docker engine (where bundles run), else of this machine."""
    machine = ""
    with contextlib.suppress(Exception):
        from agevalx.environments.engine import client

        machine = str(client().info().get("Architecture") or "")
    machine = machine or host_platform.machine()
    arch = _ARCHES.get(machine.lower())
    if arch is None:
        raise BundleError(
            "bundle_platform_unsupported",
            f"no agent bundles for the machine type {machine!r}",
            hint="agent bundles exist for linux x86_64 and aarch64 engines",
        )
    return f"linux-{arch}"


def bundle_key(spec: BundleSpec, platform: str) -> str:
    """The digest naming the bundle built from `spec` for `platform`."""
    return digest_json(spec.key_material(platform))


@dataclass(frozen=True)
class Bundle:
    """A built bundle on this machine."""

    spec: BundleSpec
    key: str
    path: Path
    """The bundle's folder on the host (mount it read-only)."""
    platform: str
    info: Mapping[str, Any] = field(default_factory=dict)
    """The marker's content: spec, key, size, files, build seconds, resolved versions."""

    @property
    def mount(self) -> tuple[str, str]:
        """(host path, container path): the bind mount for an attempt container."""
        return str(self.path), mount_point(self.spec.name)


def find_bundle(
    name: str, *, cache_dir: Path | None = None, platform: str | None = None
) -> Bundle | None:
    """The complete bundle `name` if it was built already; never builds."""
    spec = _known(name)
    platform = platform or default_platform()
    key = bundle_key(spec, platform)
    path = bundles_dir(cache_dir) / key
    info = _read_marker(path, key)
    return None if info is None else Bundle(spec, key, path, platform, info)


def ensure_bundle(
    name: str,
    *,
    cache_dir: Path | None = None,
    platform: str | None = None,
    npm: str | None = None,
) -> Bundle:
    """The bundle `name`, built first if this machine does not have it yet."""
    spec = _known(name)
    platform = platform or default_platform()
    key = bundle_key(spec, platform)
    root = bundles_dir(cache_dir)
    path = root / key
    info = _read_marker(path, key)
    if info is not None:
        return Bundle(spec, key, path, platform, info)
    root.mkdir(parents=True, exist_ok=True)
    with _file_lock(root / f".{key}.lock"):
        info = _read_marker(path, key)
        if info is None:
            info = _build(spec, key, platform, root, npm)
    return Bundle(spec, key, path, platform, info)


def entry_bundle(profile: Mapping[str, Any]) -> BundleSpec | None:
    """The bundle a role's (locked) profile runs: an `acp` profile whose entry names one."""
    if profile.get("executor") != "acp":
        return None
    options = profile.get("options") or {}
    entry = profile.get("entry") or options.get("entry") or ""
    words = str(entry).split()
    return bundle_spec(words[0]) if words else None


def _profile_bundles(profile: Mapping[str, Any]) -> tuple[BundleSpec, ...]:
    """The bundles a role's profile mounts: its ACP agent's, or a format's agent's tools."""
    from agevalx.formats.agent_registry import format_profile_bundles

    tools = format_profile_bundles(profile)
    if tools is not None:
        return tools
    spec = entry_bundle(profile)
    return () if spec is None else (spec,)


def container_mounts(
    roles: Mapping[str, Mapping[str, Any]], *, cache_dir: Path | None = None
) -> tuple[tuple[str, str], ...]:
    """Read-only bind mounts (host path, container path) for the bundles the roles run.

    `roles` are the lock's role profiles (`lock["binding"]["roles"]`). Bundles missing on
    this machine are built here, before the attempt container starts.
    """
    return tuple(bundle.mount for bundle in role_bundles(roles, cache_dir=cache_dir))


def role_bundles(
    roles: Mapping[str, Mapping[str, Any]], *, cache_dir: Path | None = None
) -> tuple[Bundle, ...]:
    """The bundles the roles run (`container_mounts` mounts them), built here if missing."""
    names = sorted({spec.name for profile in roles.values() for spec in _profile_bundles(profile)})
    return tuple(ensure_bundle(name, cache_dir=cache_dir) for name in names)


def bundle_archive(bundle: Bundle) -> Path:
    """A tar of the bundle (entries under `<name>/`), made once next to it, for copy mode."""
    target = bundle.path.with_name(f"{bundle.key}.tar")
    if target.is_file():
        return target
    with _file_lock(bundle.path.with_name(f".{bundle.key}.lock")):
        if target.is_file():
            return target
        partial = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}")
        try:
            with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as archive:
                archive.add(bundle.path, arcname=bundle.spec.name, filter=_owned_by_root)
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
    return target


# --- building --------------------------------------------------------------------------------


def _known(name: str) -> BundleSpec:
    known = known_bundles()
    spec = known.get(name)
    if spec is None:
        raise BundleError(
            "bundle_unknown",
            f"no agent bundle named {name!r}",
            hint=f"known bundles: {', '.join(sorted(known))}",
        )
    return spec


def _read_marker(path: Path, key: str) -> dict[str, Any] | None:
    try:
        info = json.loads((path / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and info.get("key") == key else None


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive flock on `path`: excludes other processes and other threads alike."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _npm(npm: str | None, name: str) -> str:
    program = npm or os.environ.get(NPM_ENV) or shutil.which("npm")
    if not program:
        raise BundleError(
            "bundle_npm_missing",
            f"building the {name} agent bundle needs npm on this machine (the agent runs on "
            "the bundled Node in the container; npm only downloads it)",
            hint=f"install it (apt-get install -y npm) or point AGEVAL_NPM at an npm binary; "
            f"or build it where npm is (ageval agents build {name}; ageval agents export "
            f"{name} -o bundles.tar) and bring it here (ageval agents import bundles.tar)",
        )
    return program


def _platform_flags(platform: str) -> list[str]:
    """npm flags that make it pick optional packages for `platform` when it is not ours."""
    own = f"linux-{_ARCHES.get(host_platform.machine().lower(), '?')}"
    if host_platform.system() == "Linux" and platform == own:
        return []
    arch = platform.split("-", 1)[1]
    return ["--os=linux", f"--cpu={arch}", "--libc=glibc"]


def _build(
    spec: BundleSpec, key: str, platform: str, root: Path, npm: str | None
) -> dict[str, Any]:
    """Build into a temporary folder, then publish it as `root/key` (caller holds the lock)."""
    for stale in root.glob(f".tmp-{key}-*"):
        shutil.rmtree(stale, ignore_errors=True)
    work = root / f".tmp-{key}-{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    try:
        work.mkdir()
        if spec.kind == "node":
            _build_node(spec, work, platform, _npm(npm, spec.name))
        else:
            _builder(spec.kind)(spec, work, platform)
        _write_files(spec, work)
        _world_readable(work)
        info = _marker(spec, key, platform, work, time.monotonic() - started)
        (work / MARKER).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
        final = root / key
        if final.exists():  # an incomplete leftover (no marker): replace it
            shutil.rmtree(final)
        os.rename(work, final)
        return info
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


def _builder(kind: str) -> Any:
    """The builder of bundles of another kind than node: `build_<kind>` of its module."""
    try:
        module = importlib.import_module(f"agevalx.agents.{kind}bundles")
        return getattr(module, f"build_{kind}")
    except (ImportError, AttributeError):
        raise BundleError("bundle_kind_unknown", f"no builder for {kind} bundles") from None


def _build_node(spec: BundleSpec, work: Path, platform: str, program: str) -> None:
    """npm packages plus the Node binary package, installed into `work`."""
    node_package = NODE_PACKAGE.format(arch=platform.split("-", 1)[1])
    dependencies = {**dict(spec.packages), node_package: spec.node}
    manifest: dict[str, Any] = {
        "name": f"ageval-bundle-{spec.name}",
        "private": True,
        "dependencies": dependencies,
    }
    (work / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
    _npm_install(program, work, platform)
    _finish(spec, work, node_package)


def _write_files(spec: BundleSpec, work: Path) -> None:
    """The spec's extra files, each inside the bundle."""
    for relative, text in spec.files:
        target = (work / relative).resolve()
        if not target.is_relative_to(work.resolve()):
            raise BundleError("bundle_build_failed", f"bundle file {relative!r} leaves the bundle")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def _npm_install(program: str, work: Path, platform: str) -> None:
    argv = [
        program,
        "install",
        "--omit=dev",
        "--ignore-scripts",
        "--no-audit",
        "--no-fund",
        *_platform_flags(platform),
    ]
    missing = BundleError(
        "bundle_npm_missing", f"cannot run {program}", hint="install npm or set AGEVAL_NPM"
    )
    run_step(argv, "npm install", cwd=work, env={**os.environ, **NPM_QUIET}, missing=missing)


def run_step(
    argv: list[str],
    what: str,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    missing: BundleError | None = None,
) -> None:
    """Run one step of a build (`what` names it in errors): `bundle_build_failed` with the
    end of its output when it fails or outlasts `BUILD_TIMEOUT`; `missing` when the program
    cannot be started."""
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            env=None if env is None else dict(env),
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT,
            check=False,
        )
    except FileNotFoundError:
        if missing is None:
            raise
        raise missing from None
    except subprocess.TimeoutExpired:
        raise BundleError(
            "bundle_build_failed", f"{what} took longer than {BUILD_TIMEOUT:g} s"
        ) from None
    if done.returncode != 0:
        output = (done.stderr or done.stdout).strip()
        raise BundleError(
            "bundle_build_failed",
            f"{what} failed with exit code {done.returncode}",
            hint=output[-1500:] or None,
        )


def _finish(spec: BundleSpec, work: Path, node_package: str) -> None:
    """Link the Node binary, write the wrappers, prune, and make everything world-readable."""
    node = work / "node_modules" / node_package / "bin" / "node"
    if not node.is_file():
        raise BundleError("bundle_build_failed", f"npm did not install {node_package}/bin/node")
    (work / "node").symlink_to(node.relative_to(work))
    written = dict(spec.files)  # written after the install
    for relative in [spec.entry, *(script for _, script in spec.wrappers)]:
        if relative not in written and not (work / relative).is_file():
            raise BundleError("bundle_build_failed", f"the bundle lacks {relative}")
    bin_dir = work / "bin"
    bin_dir.mkdir()
    for name, script in spec.wrappers:
        wrapper = bin_dir / name
        wrapper.write_text(_wrapper_script(script))
        wrapper.chmod(0o755)
    for pattern in spec.prune:
        for path in work.glob(pattern):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)


def _wrapper_script(script: str) -> str:
    """`bin/<name>`: run `script` with the bundled Node, wherever the bundle is."""
    return (
        "#!/bin/sh\n"
        "# Written by ageval: runs the CLI with the Node of this bundle.\n"
        'root="${0%/*}/.."\n'
        f'exec "$root/node" "$root/{script}" "$@"\n'
    )


def _world_readable(root: Path) -> None:
    """Agents may run as any user in the container: `chmod -R a+rX`."""
    for directory, _, files in os.walk(root):
        os.chmod(directory, os.stat(directory).st_mode | 0o555)
        for name in files:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                mode = os.stat(path).st_mode
                os.chmod(path, mode | (0o555 if mode & 0o100 else 0o444))


def _marker(
    spec: BundleSpec, key: str, platform: str, work: Path, seconds: float
) -> dict[str, Any]:
    size = files = 0
    for directory, _, names in os.walk(work):
        for name in names:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                size += os.lstat(path).st_size
                files += 1
    resolved: dict[str, str] = {}
    lock = work / "package-lock.json"
    with contextlib.suppress(OSError, ValueError):
        packages = json.loads(lock.read_text()).get("packages", {})
        for name in [*dict(spec.packages), NODE_PACKAGE.format(arch=platform.split("-", 1)[1])]:
            version = packages.get(f"node_modules/{name}", {}).get("version")
            if isinstance(version, str):
                resolved[name] = version
    with contextlib.suppress(OSError, ValueError):  # a python bundle's pip-resolved versions
        resolved.update(json.loads((work / "python" / "resolved.json").read_text()))
    return {
        "key": key,
        "spec": spec.key_material(platform),
        "bytes": size,
        "files": files,
        "build_seconds": round(seconds, 2),
        "resolved": resolved,
    }


def _owned_by_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info
