"""The one exception the cache raises; its `code` says what went wrong."""

from __future__ import annotations

from agevalx.errors import AgevalError


class CacheError(AgevalError):
    """A cache operation failed.

    Stable codes: `cache_corrupt_object`, `cache_missing_object`, `cache_unwritable`,
    `cache_invalid_name`, `cache_invalid_tree`, `cache_invalid_action`, `cache_invalid_ref`,
    `cache_unsafe_path`, `cache_restore_target_not_empty`, `cache_version_mismatch`,
    `cache_source_changed`, `cache_source_unreadable`, `cache_not_a_directory`,
    `cache_invalid_glob`, `cache_unencodable_path`, `cache_lock_unusable`.
    """
