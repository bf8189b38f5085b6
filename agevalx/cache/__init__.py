"""The content-addressed build cache: blobs, trees, action entries, refs.

`CacheStore` is the store; `hash_tree` describes a directory without storing it;
`collect_garbage`, `verify_cache`, `disk_usage` and `list_actions` are the maintenance
operations the CLI calls. The on-disk format is specified in `cache_layout.md`.

Submodules are imported on first use of a name, so a command that only reads the cache
(`agevalx.cache.store`, `agevalx.cache.manifest`) does not load garbage collection or
verification.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agevalx.lazy import lazy_names

if TYPE_CHECKING:
    from agevalx.cache.errors import CacheError
    from agevalx.cache.gc import DEFAULT_KEEP_NEWEST, GcReport, collect_garbage
    from agevalx.cache.location import default_cache_dir, resolve_cache_dir
    from agevalx.cache.manifest import ActionManifest, OutputRef, TreeEntry, TreeManifest
    from agevalx.cache.statcache import StatCache
    from agevalx.cache.store import CacheStore
    from agevalx.cache.tree import hash_tree
    from agevalx.cache.usage import ActionInfo, AreaUsage, CacheUsage, disk_usage, list_actions
    from agevalx.cache.verify import BrokenAction, CorruptFile, VerifyReport, verify_cache

_LAZY = {
    "DEFAULT_KEEP_NEWEST": "agevalx.cache.gc",
    "ActionInfo": "agevalx.cache.usage",
    "ActionManifest": "agevalx.cache.manifest",
    "AreaUsage": "agevalx.cache.usage",
    "BrokenAction": "agevalx.cache.verify",
    "CacheError": "agevalx.cache.errors",
    "CacheStore": "agevalx.cache.store",
    "CacheUsage": "agevalx.cache.usage",
    "CorruptFile": "agevalx.cache.verify",
    "GcReport": "agevalx.cache.gc",
    "OutputRef": "agevalx.cache.manifest",
    "StatCache": "agevalx.cache.statcache",
    "TreeEntry": "agevalx.cache.manifest",
    "TreeManifest": "agevalx.cache.manifest",
    "VerifyReport": "agevalx.cache.verify",
    "collect_garbage": "agevalx.cache.gc",
    "default_cache_dir": "agevalx.cache.location",
    "disk_usage": "agevalx.cache.usage",
    "hash_tree": "agevalx.cache.tree",
    "list_actions": "agevalx.cache.usage",
    "resolve_cache_dir": "agevalx.cache.location",
    "verify_cache": "agevalx.cache.verify",
}

__all__ = [
    "DEFAULT_KEEP_NEWEST",
    "ActionInfo",
    "ActionManifest",
    "AreaUsage",
    "BrokenAction",
    "CacheError",
    "CacheStore",
    "CacheUsage",
    "CorruptFile",
    "GcReport",
    "OutputRef",
    "StatCache",
    "TreeEntry",
    "TreeManifest",
    "VerifyReport",
    "collect_garbage",
    "default_cache_dir",
    "disk_usage",
    "hash_tree",
    "list_actions",
    "resolve_cache_dir",
    "verify_cache",
]


__getattr__ = lazy_names(__name__, _LAZY)
