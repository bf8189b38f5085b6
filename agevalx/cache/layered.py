"""A local cache in front of a remote one: read-through and write-through.

`LayeredStore` is a `CacheStore` (so everything above the cache takes it unchanged) whose
two action methods also talk to a `RemoteStore`:

- `get_action`: a local miss is looked up on the remote. The remote entry counts only if
  every object it reaches downloads and re-hashes to its digest (and, with a signing key,
  the entry's signature verifies); the objects and then the entry are stored locally, and
  the local entry is returned. Anything else is a miss plus a warning.
- `publish_ref`: a ref (a job's, a leaderboard's) is set on the remote, with the blobs it
  names directly.
- `put_action`: once the entry is stored locally, it is uploaded with every object it
  reaches that the remote lacks, at once, so a crash loses nothing that finished. A
  read-only remote is never written to.

The remote never fails an operation: its errors become warnings and counts in
`remote.stats`, and after the first outage it is left alone for the rest of the session.

The remote's modules and the transfer are imported only when a remote is used, so a command
that imports `LayeredStore` (to ask whether its store is one) does not load them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from agevalx.cache.backend import ActionId, ObjectId
from agevalx.cache.errors import CacheError
from agevalx.cache.manifest import ActionManifest
from agevalx.cache.store import CacheStore
from agevalx.limits import REMOTE_ENV

if TYPE_CHECKING:
    from agevalx.cache.remote.stats import RemoteStats
    from agevalx.cache.remote.store import RemoteStore


class LayeredStore(CacheStore):
    """The local cache at `root`, backed by `remote`."""

    def __init__(self, root: Path, remote: RemoteStore) -> None:
        super().__init__(root)
        self.remote = remote

    @property
    def remote_stats(self) -> RemoteStats:
        """Hits, misses, uploads, write errors and warnings of the remote so far."""
        return self.remote.stats

    def get_action(
        self, kind: str, key: str, present: set[tuple[str, str]] | None = None
    ) -> ActionManifest | None:
        found = super().get_action(kind, key, present)
        if found is not None:
            return found
        if self.remote.available:
            from agevalx.cache.transfer import transfer

            report = transfer(self.remote, self, [ActionId(kind, key)], direction="pull")
            found = super().get_action(kind, key, present)
            for skipped in report.skipped if self.remote.available else []:
                self.remote.stats.warn(
                    "remote_entry_unusable",
                    f"{skipped.action} from remote {self.remote.location} not used: "
                    f"{skipped.reason}; it will be recomputed",
                )
        self.remote.stats.add(hits=found is not None, misses=found is None)
        return found

    def get_actions(self, actions: Iterable[ActionId]) -> dict[ActionId, ActionManifest | None]:
        """`get_action` of several entries, the local misses pulled in one transfer: their
        reads run concurrently instead of one entry after another."""
        found: dict[ActionId, ActionManifest | None] = {}
        for action in sorted(set(actions)):
            found[action] = super().get_action(action.kind, action.key)
        absent = [action for action, manifest in found.items() if manifest is None]
        if absent and self.remote.available:
            from agevalx.cache.transfer import transfer

            report = transfer(self.remote, self, absent, direction="pull")
            for action in absent:
                found[action] = super().get_action(action.kind, action.key)
            for skipped in report.skipped if self.remote.available else []:
                self.remote.stats.warn(
                    "remote_entry_unusable",
                    f"{skipped.action} from remote {self.remote.location} not used: "
                    f"{skipped.reason}; it will be recomputed",
                )
        for action in absent:
            self.remote.stats.add(hits=found[action] is not None, misses=found[action] is None)
        return found

    def put_action(self, manifest: ActionManifest) -> None:
        super().put_action(manifest)
        if self.remote.read_only:
            return
        if not self.remote.available:
            self.remote.stats.add(write_errors=1)
            return
        from agevalx.cache.transfer import transfer

        report = transfer(self, self.remote, [ActionId.of(manifest)], direction="push")
        self.remote.stats.add(write_errors=len(report.skipped))
        for skipped in report.skipped if self.remote.available else []:
            self.remote.stats.warn(
                "remote_write_failed",
                f"{skipped.action} was not uploaded to {self.remote.location}: {skipped.reason}",
            )

    def publish_ref(self, name: str, targets: Iterable[str]) -> None:
        """Set a ref on the remote (a gc root there), uploading the blobs it names directly
        (a job's record); the entries it names were uploaded as they were stored."""
        kept = tuple(targets)
        if self.remote.read_only:
            return
        if not self.remote.available:
            self.remote.stats.add(write_errors=1)
            return
        blobs = {ObjectId("blob", target) for target in kept if "/" not in target}
        try:
            for obj in sorted(self.remote.missing_objects(blobs)):
                self.remote.write_object(obj, self.read_object(obj))
            self.remote.set_ref(name, kept)
        except CacheError as exc:
            self.remote.stats.add(write_errors=1)
            if self.remote.available:
                self.remote.stats.warn(
                    "remote_write_failed",
                    f"ref {name} was not uploaded to {self.remote.location}: {exc.message}",
                )

    def close(self) -> None:
        super().close()
        self.remote.close()


def open_cache(root: Path, remote: str | None = None) -> CacheStore:
    """The cache at `root`, layered over `remote` (a configured name or a URL) or over
    `$AGEVAL_REMOTE` when either is given; otherwise the local cache alone."""
    if not (remote or os.environ.get(REMOTE_ENV)):
        return CacheStore(root)
    from agevalx.cache.remote.config import open_remote

    with CacheStore(root) as local:
        opened = open_remote(local, remote)
    return LayeredStore(root, opened)
