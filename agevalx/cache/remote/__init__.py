"""Shared remote caches over fsspec: the remote backend, its configuration, signing and gc.

- `RemoteStore`: the action cache + content store at an fsspec URL (create-only writes,
  re-hashed reads, HMAC-signed entries); `RemoteStats` counts what it did.
- `add_remote`, `remove_remote`, `load_remotes`, `resolve_remote`, `open_remote`: named
  remotes kept in `<cache>/remotes.json`, and `$AGEVAL_REMOTE`.
- `collect_remote_garbage`: gc of a remote from its own refs.

Importing this package does not import fsspec; opening a remote does.
"""

from agevalx.cache.remote.config import (
    REMOTE_ENV,
    RemoteConfig,
    ResolvedRemote,
    add_remote,
    load_remotes,
    open_remote,
    remove_remote,
    resolve_remote,
)
from agevalx.cache.remote.entry import SIGNING_KEY_ENV, RemoteEntry
from agevalx.cache.remote.gc import RemoteGcReport, collect_remote_garbage
from agevalx.cache.remote.stats import RemoteStats, RemoteWarning
from agevalx.cache.remote.store import RemoteError, RemoteStore

__all__ = [
    "REMOTE_ENV",
    "SIGNING_KEY_ENV",
    "RemoteConfig",
    "RemoteEntry",
    "RemoteError",
    "RemoteGcReport",
    "RemoteStats",
    "RemoteStore",
    "RemoteWarning",
    "ResolvedRemote",
    "add_remote",
    "collect_remote_garbage",
    "load_remotes",
    "open_remote",
    "remove_remote",
    "resolve_remote",
]
