"""What a remote did during one session: counts and warnings, for the end-of-run line."""

from __future__ import annotations

import logging
import threading

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

MAX_WARNINGS = 50
"""Warnings kept verbatim; later ones are only counted (a dead remote repeats itself)."""

logger = logging.getLogger("agevalx.cache.remote")


class RemoteWarning(BaseModel):
    """One thing the remote got wrong, which ageval worked around."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    code: str
    """Stable code: `remote_unavailable`, `remote_entry_unsigned`, `remote_entry_bad_signature`,
    `remote_entry_malformed`, `remote_entry_unusable`, `remote_write_failed`, ..."""
    message: str
    """What happened, in one line."""


class RemoteStats(BaseModel):
    """Counters of one remote, updated from any thread."""

    model_config = ConfigDict(extra="forbid")

    hits: int = 0
    """Local misses that the remote served (every object downloaded and verified)."""
    misses: int = 0
    """Local misses the remote could not serve: absent, incomplete, corrupt, untrusted."""
    uploads: int = 0
    """Action entries this session created on the remote."""
    objects_uploaded: int = 0
    """Blobs and trees this session created on the remote."""
    bytes_uploaded: int = 0
    """Their bytes, entries included."""
    objects_downloaded: int = 0
    """Blobs and trees read from the remote (each re-hashed)."""
    bytes_downloaded: int = 0
    """Their bytes, entries included."""
    write_errors: int = 0
    """Entries that could not be uploaded (the run goes on; the local cache keeps them)."""
    read_errors: int = 0
    """Reads that failed for another reason than absence: outage, corruption, bad signature."""
    warnings: list[RemoteWarning] = Field(default_factory=list)
    """The first MAX_WARNINGS warnings."""
    warnings_dropped: int = 0
    """Warnings beyond those."""
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def add(self, **counts: int) -> None:
        """Add to counters by name, atomically."""
        with self._lock:
            for name, amount in counts.items():
                setattr(self, name, getattr(self, name) + amount)

    def warn(self, code: str, message: str) -> None:
        """Record a warning (and log it on `agevalx.cache.remote`)."""
        logger.warning("%s: %s", code, message)
        with self._lock:
            if len(self.warnings) < MAX_WARNINGS:
                self.warnings.append(RemoteWarning(code=code, message=message))
            else:
                self.warnings_dropped += 1

    def summary(self) -> str:
        """One line for the end of a run."""
        return (
            f"remote: {self.hits} hits, {self.misses} misses, {self.uploads} uploads, "
            f"{self.write_errors} write errors, {len(self.warnings) + self.warnings_dropped} "
            f"warnings ({self.bytes_uploaded} bytes up, {self.bytes_downloaded} down)"
        )
