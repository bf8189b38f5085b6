"""`ageval agents`: the catalog's agents, their bundles on this machine, building and moving them.

A machine without npm or PyPI (an air-gapped cluster node) gets bundles from one that has
them: `ageval agents export NAME... -o bundles.tar` there, `ageval agents import bundles.tar`
here. An archive is untrusted input: every member must lie inside its bundle's folder (no
absolute path, no `..`, no link leading out, no device), each bundle must be one the catalog
knows for this machine's platform (its folder named by the key of the spec this ageval has),
and its marker must count the files and bytes that arrived. Nothing is published until its
bundle checked out whole; each is published with one rename, as a build is.
"""

from __future__ import annotations

import io
import json
import os
import posixpath
import shutil
import tarfile
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agevalx.agents import bundles, catalog
from agevalx.agents.catalog.base import API_NAMES, AgentDef, provider_named
from agevalx.errors import AgevalError, UsageError

EXPORT_FORMAT = "ageval.bundles/1"
"""The first member of an export, `ageval-bundles.json`, names this format."""

INDEX = "ageval-bundles.json"


@dataclass(frozen=True)
class AgentInfo:
    """One line of `ageval agents`."""

    name: str
    version: str
    packages: list[tuple[str, str]]
    kind: str
    api: str
    providers: list[str]
    key_variable: str
    summary: str
    records: str
    built: bool
    bytes: int | None
    files: int | None
    build_seconds: float | None
    key: str
    path: str | None

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "packages": [list(pair) for pair in self.packages],
            "kind": self.kind,
            "api": self.api,
            "providers": self.providers,
            "key_variable": self.key_variable,
            "summary": self.summary,
            "records": self.records,
            "built": self.built,
            "bytes": self.bytes,
            "files": self.files,
            "build_seconds": self.build_seconds,
            "key": self.key,
            "path": self.path,
        }


def _known(names: Iterable[str]) -> list[AgentDef]:
    known = catalog.agents()
    chosen: list[AgentDef] = []
    for name in names:
        agent = known.get(name)
        if agent is None:
            raise UsageError(
                "unknown_agent",
                f"no agent named {name!r} in the catalog",
                field="NAME",
                hint=f"use one of: {', '.join(sorted(known))}",
            )
        chosen.append(agent)
    return chosen


def agent_info(agent: AgentDef, platform: str) -> AgentInfo:
    """What `ageval agents` says of one agent."""
    provider = provider_named(agent.providers[0])
    assert provider is not None, f"{agent.name}'s default provider is unknown"
    found = bundles.find_bundle(agent.name, platform=platform)
    info = found.info if found is not None else {}
    return AgentInfo(
        name=agent.name,
        version=agent.version,
        packages=list(agent.bundle.packages),
        kind=agent.bundle.kind,
        api=API_NAMES[agent.api(provider)],
        providers=list(agent.providers),
        key_variable=provider.key_variable,
        summary=agent.summary,
        records=agent.records,
        built=found is not None,
        bytes=info.get("bytes"),
        files=info.get("files"),
        build_seconds=info.get("build_seconds"),
        key=bundles.bundle_key(agent.bundle, platform),
        path=str(found.path) if found is not None else None,
    )


def list_agents(platform: str | None = None) -> list[AgentInfo]:
    """Every agent of the catalog, by name."""
    platform = platform or bundles.default_platform()
    return [agent_info(agent, platform) for _, agent in sorted(catalog.agents().items())]


@dataclass(frozen=True)
class Built:
    name: str
    key: str
    path: str
    seconds: float
    built: bool
    """False when the bundle was there already."""


def build_agents(
    names: Iterable[str], *, on_start: Callable[[str], None] | None = None
) -> list[Built]:
    """Build the named agents' bundles that this machine lacks, one after another."""
    done: list[Built] = []
    for agent in _known(names):
        started = time.monotonic()
        present = bundles.find_bundle(agent.name) is not None
        if on_start is not None and not present:
            on_start(agent.name)
        bundle = bundles.ensure_bundle(agent.name)
        done.append(
            Built(
                agent.name,
                bundle.key,
                str(bundle.path),
                round(time.monotonic() - started, 2),
                built=not present,
            )
        )
    return done


# --- export and import -----------------------------------------------------------------------


def export_bundles(names: Iterable[str], output: Path) -> list[dict[str, Any]]:
    """Write the named agents' built bundles into one tar at `output`."""
    chosen = _known(names)
    platform = bundles.default_platform()
    found: list[bundles.Bundle] = []
    for agent in chosen:
        bundle = bundles.find_bundle(agent.name, platform=platform)
        if bundle is None:
            raise AgevalError(
                "bundle_not_built",
                f"the {agent.name} bundle is not built on this machine",
                hint=f"ageval agents build {agent.name}, then export it",
            )
        found.append(bundle)
    listed: list[dict[str, Any]] = [{"name": b.spec.name, "key": b.key} for b in found]
    index = {"format": EXPORT_FORMAT, "platform": platform, "bundles": listed}
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(f".{output.name}.{uuid.uuid4().hex[:8]}")
    try:
        with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as archive:
            data = (json.dumps(index, indent=2) + "\n").encode()
            member = tarfile.TarInfo(INDEX)
            member.size = len(data)
            member.mode = 0o644
            archive.addfile(member, _bytes_reader(data))
            for bundle in found:
                archive.add(bundle.path, arcname=bundle.key, filter=_owned_by_root)
        os.replace(partial, output)
    finally:
        partial.unlink(missing_ok=True)
    return listed


def _bytes_reader(data: bytes) -> io.BytesIO:
    return io.BytesIO(data)


def _owned_by_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def import_bundles(archive_path: Path) -> list[dict[str, Any]]:
    """Check and publish the bundles of an export; bundles already here are left alone."""
    platform = bundles.default_platform()
    expected = {
        bundles.bundle_key(agent.bundle, platform): agent.name
        for agent in catalog.agents().values()
    }
    root = bundles.bundles_dir()
    root.mkdir(parents=True, exist_ok=True)
    work = root / f".import-{uuid.uuid4().hex[:8]}"
    work.mkdir()
    imported: list[dict[str, Any]] = []
    try:
        keys = _extract(archive_path, work, expected, platform)
        for key in keys:
            name = expected[key]
            info = _check_unpacked(work / key, key)
            target = root / key
            if bundles.find_bundle(name, platform=platform) is not None:
                imported.append({"name": name, "key": key, "imported": False})
                continue
            if target.exists():  # an incomplete leftover (no marker): replace it
                shutil.rmtree(target)
            os.rename(work / key, target)
            imported.append(
                {"name": name, "key": key, "imported": True, "bytes": info.get("bytes")}
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return imported


def _bad(message: str) -> AgevalError:
    return AgevalError(
        "bundle_archive_invalid",
        message,
        hint="export the bundles again with `ageval agents export` of the same ageval version",
    )


def _extract(archive_path: Path, work: Path, expected: dict[str, str], platform: str) -> list[str]:
    try:
        with tarfile.open(archive_path, "r:*") as archive:
            return _extract_open(archive, archive_path, work, expected, platform)
    except (OSError, tarfile.TarError) as exc:
        raise _bad(f"cannot read {archive_path}: {exc}") from None


def _extract_open(
    archive: tarfile.TarFile,
    archive_path: Path,
    work: Path,
    expected: dict[str, str],
    platform: str,
) -> list[str]:
    members = archive.getmembers()
    if not members or members[0].name != INDEX or not members[0].isfile():
        raise _bad(f"{archive_path} does not start with {INDEX}")
    handle = archive.extractfile(members[0])
    try:
        index = json.loads(handle.read() if handle else b"")
    except ValueError:
        raise _bad(f"{INDEX} is not JSON") from None
    if not isinstance(index, dict) or index.get("format") != EXPORT_FORMAT:
        raise _bad(f"{INDEX} is not {EXPORT_FORMAT}")
    if index.get("platform") != platform:
        raise _bad(f"the bundles are for {index.get('platform')!r}, this engine is {platform}")
    keys = [str(entry.get("key")) for entry in index.get("bundles") or []]
    unknown = [key for key in keys if key not in expected]
    if unknown:
        raise _bad(f"bundle {unknown[0]} is not one this ageval builds (another version's agent?)")
    for member in members[1:]:
        _check_member(member, set(keys))
    archive.extractall(work, members=members[1:], filter="data")
    return keys


def _check_member(member: tarfile.TarInfo, keys: set[str]) -> None:
    name = member.name
    normal = posixpath.normpath(name)
    top = normal.split("/", 1)[0]
    if name.startswith("/") or normal.startswith("..") or top not in keys:
        raise _bad(f"member {name!r} lies outside the bundles it names")
    if not (member.isfile() or member.isdir() or member.issym()):
        raise _bad(f"member {name!r} is neither a file, a folder nor a symbolic link")
    if member.issym():
        target = posixpath.normpath(posixpath.join(posixpath.dirname(normal), member.linkname))
        if member.linkname.startswith("/") or target.split("/", 1)[0] != top:
            raise _bad(f"link {name!r} leads out of its bundle ({member.linkname!r})")


def _check_unpacked(path: Path, key: str) -> dict[str, Any]:
    try:
        info = json.loads((path / bundles.MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise _bad(f"bundle {key} has no readable {bundles.MARKER}") from None
    if not isinstance(info, dict) or info.get("key") != key:
        raise _bad(f"bundle {key}'s marker names another key")
    size = files = 0
    for directory, _, names in os.walk(path):
        for name in names:
            item = os.path.join(directory, name)
            if not os.path.islink(item) and name != bundles.MARKER:
                size += os.lstat(item).st_size
                files += 1
    if (files, size) != (info.get("files"), info.get("bytes")):
        raise _bad(
            f"bundle {key} arrived with {files} files and {size} bytes, its marker counts "
            f"{info.get('files')} and {info.get('bytes')}"
        )
    return info
