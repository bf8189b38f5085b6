"""Shared remote caches over fsspec: the remote backend, its configuration, signing and gc.

- `RemoteStore`: the action cache + content store at an fsspec URL (create-only writes,
  re-hashed reads, HMAC-signed entries); `RemoteStats` counts what it did.
- `add_remote`, `remove_remote`, `load_remotes`, `resolve_remote`, `open_remote`: named
  remotes kept in `<cache>/remotes.json`, and `$AGEVAL_REMOTE`.
- `collect_remote_garbage`: gc of a remote from its own refs.

Importing this package does not import fsspec; opening a remote does. Its submodules are
imported on first use of a name, so importing one of them (`agevalx.cache.remote.stats`)
does not load the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agevalx.lazy import lazy_names

if TYPE_CHECKING:
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

_LAZY = {
    "REMOTE_ENV": "agevalx.cache.remote.config",
    "SIGNING_KEY_ENV": "agevalx.cache.remote.entry",
    "RemoteConfig": "agevalx.cache.remote.config",
    "RemoteEntry": "agevalx.cache.remote.entry",
    "RemoteError": "agevalx.cache.remote.store",
    "RemoteGcReport": "agevalx.cache.remote.gc",
    "RemoteStats": "agevalx.cache.remote.stats",
    "RemoteStore": "agevalx.cache.remote.store",
    "RemoteWarning": "agevalx.cache.remote.stats",
    "ResolvedRemote": "agevalx.cache.remote.config",
    "add_remote": "agevalx.cache.remote.config",
    "collect_remote_garbage": "agevalx.cache.remote.gc",
    "load_remotes": "agevalx.cache.remote.config",
    "open_remote": "agevalx.cache.remote.config",
    "remove_remote": "agevalx.cache.remote.config",
    "resolve_remote": "agevalx.cache.remote.config",
}

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


__getattr__ = lazy_names(__name__, _LAZY)
