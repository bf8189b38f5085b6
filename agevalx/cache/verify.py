"""Re-hash every stored object and check every action entry.

Without `remove_corrupt`, verify only reports (under the shared lock, alongside
writers). With it, verify holds the gc lock exclusively and deletes corrupt blobs, trees
and malformed action entries, so later lookups are plain misses.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agevalx.cache import layout
from agevalx.cache.errors import CacheError
from agevalx.cache.manifest import ActionManifest, TreeManifest
from agevalx.cache.scan import iter_action_files, iter_blob_files, iter_tree_files
from agevalx.cache.store import CacheStore, discard
from agevalx.cache.streams import pump

Area = Literal["objects", "trees", "actions"]


class CorruptFile(BaseModel):
    """A stored file that cannot be trusted."""

    model_config = ConfigDict(extra="forbid")

    area: Area
    """Which part of the cache it is in."""
    name: str
    """Its digest (objects, trees) or `kind/key` (actions), as read from its path."""
    path: str
    """Absolute path of the file."""
    reason: str
    """`digest_mismatch`, `bad_name`, `unreadable`, `invalid_manifest`, `malformed_entry`, or
    `invalid_output` (an entry whose blob breaks its format)."""


class BrokenAction(BaseModel):
    """A well-formed action entry that names objects the cache does not hold."""

    model_config = ConfigDict(extra="forbid")

    kind: str
    """The entry's node kind."""
    key: str
    """The entry's node key."""
    missing: list[str]
    """Digests of the absent, truncated or corrupt blobs and trees."""


class InvalidOutput(BaseModel):
    """An entry whose blob verifies against its digest but breaks its declared format."""

    model_config = ConfigDict(extra="forbid")

    kind: str
    key: str
    output: str
    """The output's name."""
    problem: str
    """What the parse reported (its first line)."""


OutputCheck = Callable[[bytes], str | None]
"""Parses an output blob; the problem, or None when it is well-formed."""


class VerifyReport(BaseModel):
    """The outcome of re-hashing a cache."""

    model_config = ConfigDict(extra="forbid")

    objects_checked: int = 0
    """Blobs re-hashed."""
    trees_checked: int = 0
    """Tree manifests re-hashed and validated."""
    actions_checked: int = 0
    """Action entries parsed and checked for completeness."""
    corrupt: list[CorruptFile] = Field(default_factory=list)
    """Files whose content does not match their name or format."""
    broken_actions: list[BrokenAction] = Field(default_factory=list)
    """Entries that would be misses because objects they name are missing."""
    invalid_outputs: list[InvalidOutput] = Field(default_factory=list)
    """Entries whose blob does not parse as its rule's model (they would poison reads)."""
    removed: int = 0
    """Corrupt files deleted (only with `remove_corrupt`)."""

    @property
    def ok(self) -> bool:
        """True if nothing is corrupt or broken."""
        return not self.corrupt and not self.broken_actions and not self.invalid_outputs


def verify_cache(
    store: CacheStore,
    *,
    remove_corrupt: bool = False,
    checks: Mapping[tuple[str, str], OutputCheck] | None = None,
) -> VerifyReport:
    """Re-hash every blob and tree and check every action entry; optionally delete bad files.

    `checks` parse the blobs of `(kind, output)`: an entry whose blob fails is reported in
    `invalid_outputs` (and deleted with `remove_corrupt`: it becomes a miss)."""
    lock: AbstractContextManager[None] = (
        store.lock.exclusive() if remove_corrupt else store.in_use()
    )
    report = VerifyReport()
    with lock:
        trees: dict[str, TreeManifest | None] = {}
        _check_blobs(store, report)
        _check_trees(store, report, trees)
        if remove_corrupt:
            _remove(report)
        _check_actions(store, report, trees, {bad.name for bad in report.corrupt}, checks or {})
        if remove_corrupt:
            _remove(report, area="actions")
    return report


def _remove(report: VerifyReport, area: Area | None = None) -> None:
    for bad in report.corrupt:
        if area is None or bad.area == area:
            discard(Path(bad.path))
            report.removed += not os.path.exists(bad.path)


def _check_blobs(store: CacheStore, report: VerifyReport) -> None:
    for name, path in iter_blob_files(store):
        report.objects_checked += 1
        reason = _content_problem(name, path)
        if reason:
            report.corrupt.append(
                CorruptFile(area="objects", name=name, path=str(path), reason=reason)
            )


def _check_trees(
    store: CacheStore, report: VerifyReport, trees: dict[str, TreeManifest | None]
) -> None:
    """Re-hash and parse every manifest, recording the parsed ones in `trees`."""
    for name, path in iter_tree_files(store):
        report.trees_checked += 1
        reason = _content_problem(name, path)
        if not reason:
            try:
                trees[name] = TreeManifest.from_bytes(path.read_bytes(), source=str(path))
                continue
            except CacheError:
                reason = "invalid_manifest"
        trees[name] = None
        report.corrupt.append(CorruptFile(area="trees", name=name, path=str(path), reason=reason))


def _check_actions(
    store: CacheStore,
    report: VerifyReport,
    trees: dict[str, TreeManifest | None],
    corrupt: set[str],
    checks: Mapping[tuple[str, str], OutputCheck],
) -> None:
    """Report malformed entries, entries naming missing or corrupt objects, and entries whose
    blobs break their format."""
    for action in iter_action_files(store):
        report.actions_checked += 1
        if action.manifest is None:
            report.corrupt.append(
                CorruptFile(
                    area="actions",
                    name=action.name,
                    path=str(action.path),
                    reason="malformed_entry",
                )
            )
            continue
        missing = store.missing_outputs(action.manifest, trees)
        missing += [d for d in _named(action.manifest, trees) if d in corrupt and d not in missing]
        if missing:
            report.broken_actions.append(
                BrokenAction(kind=action.kind, key=action.key, missing=missing)
            )
            continue
        for output, ref in action.manifest.outputs.items():
            check = checks.get((action.kind, output))
            problem = check(store.get_bytes(ref.digest)) if check else None
            if problem is not None:
                report.invalid_outputs.append(
                    InvalidOutput(kind=action.kind, key=action.key, output=output, problem=problem)
                )
                report.corrupt.append(
                    CorruptFile(
                        area="actions",
                        name=action.name,
                        path=str(action.path),
                        reason="invalid_output",
                    )
                )


def _named(manifest: ActionManifest, trees: dict[str, TreeManifest | None]) -> list[str]:
    """Every digest an entry depends on: its outputs and the blobs of its trees."""
    named: list[str] = []
    for output in manifest.outputs.values():
        named.append(output.digest)
        tree = trees.get(output.digest) if output.type == "tree" else None
        if tree is not None:
            named.extend(entry.digest for entry in tree.files() if entry.digest)
    return named


def _content_problem(name: str, path: Path) -> str | None:
    """Why a file named by a digest does not deserve its name, or None."""
    if not layout.DIGEST_RE.fullmatch(name):
        return "bad_name"
    try:
        with path.open("rb", buffering=0) as handle:
            digest, _ = pump(handle.fileno())
    except FileNotFoundError:
        return None
    except OSError:
        return "unreadable"
    return None if digest == name else "digest_mismatch"
