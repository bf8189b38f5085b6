"""The content-addressed build cache: blobs, trees, action entries, refs.

`CacheStore` is the store; `hash_tree` describes a directory without storing it;
`collect_garbage`, `verify_cache`, `disk_usage` and `list_actions` are the maintenance
operations the CLI calls. The on-disk format is specified in `cache_layout.md`.
"""

from agevalx.cache.errors import CacheError
from agevalx.cache.gc import DEFAULT_KEEP_NEWEST, GcReport, collect_garbage
from agevalx.cache.location import default_cache_dir, resolve_cache_dir
from agevalx.cache.manifest import ActionManifest, OutputRef, TreeEntry, TreeManifest
from agevalx.cache.statcache import StatCache
from agevalx.cache.store import CacheStore
from agevalx.cache.tree import hash_tree
from agevalx.cache.usage import ActionInfo, AreaUsage, CacheUsage, disk_usage, list_actions
from agevalx.cache.verify import BrokenAction, CorruptFile, VerifyReport, verify_cache

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
