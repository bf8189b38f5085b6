"""The remote action-entry format and its HMAC-SHA256 signature.

A remote action file wraps the local entry with its signature, so entry and signature are
one object and one atomic write:

    {"entry":{...the local action entry...},"schema":1,"signature":"<64 hex>" or null}

The signed message is the 22 ASCII bytes `ageval-remote-entry 1\\n` followed by the canonical
JSON of `entry` (byte for byte what the local cache stores for it). The MAC is
HMAC-SHA256 keyed with the UTF-8 bytes of `$AGEVAL_CACHE_SIGNING_KEY`, written as 64
lowercase hex characters. See `cache_layout.md`, "Remote caches".
"""

from __future__ import annotations

import hashlib
import hmac
import os
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, StringConstraints, ValidationError

from agevalx.cache.errors import CacheError
from agevalx.cache.manifest import ActionManifest
from agevalx.hashing import canonical_json

SIGNING_KEY_ENV = "AGEVAL_CACHE_SIGNING_KEY"
SIGNATURE_CONTEXT = b"ageval-remote-entry 1\n"
"""Prefix of every signed message: a MAC made for anything else never verifies here."""

Signature = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class RemoteEntry(BaseModel):
    """One action entry as a remote stores it: the entry and who vouches for it."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        validate_by_name=True,
        serialize_by_alias=True,
    )

    schema_version: Literal[1] = Field(default=1, alias="schema")
    """Version of this format; readers refuse versions they do not know."""
    entry: dict[str, JsonValue]
    """The action entry, exactly the document the local cache stores (`actions/`)."""
    signature: Signature | None = None
    """HMAC-SHA256 of the signed message, or null when the writer had no signing key."""

    @classmethod
    def wrap(cls, manifest: ActionManifest, key: bytes | None) -> RemoteEntry:
        """The remote form of `manifest`, signed when `key` is given."""
        document = manifest.model_dump(mode="json")
        signature = sign(key, canonical_json(document)) if key else None
        return cls(entry=document, signature=signature)

    def canonical_bytes(self) -> bytes:
        """The exact bytes of the remote action file."""
        return canonical_json(self.model_dump(mode="json"))

    def entry_bytes(self) -> bytes:
        """The canonical JSON of `entry`: what is signed and what the local cache stores."""
        return canonical_json(self.entry)

    def manifest(self, source: str) -> ActionManifest:
        """The wrapped entry, validated (`cache_invalid_action` if it is malformed)."""
        return ActionManifest.from_bytes(self.entry_bytes(), source=source)

    @classmethod
    def from_bytes(cls, data: bytes, *, source: str) -> RemoteEntry:
        try:
            return cls.model_validate_json(data)
        except ValidationError as exc:
            raise CacheError(
                "cache_invalid_action", f"malformed remote action entry: {exc}", file=source
            ) from exc


def signing_key_from_env() -> bytes | None:
    """The signing key from `$AGEVAL_CACHE_SIGNING_KEY` (UTF-8), or None when unset or empty."""
    value = os.environ.get(SIGNING_KEY_ENV)
    return value.encode("utf-8") if value else None


def sign(key: bytes, entry_bytes: bytes) -> str:
    """HMAC-SHA256 over the context prefix and the entry's canonical bytes, as hex."""
    return hmac.new(key, SIGNATURE_CONTEXT + entry_bytes, hashlib.sha256).hexdigest()


def signature_ok(key: bytes, entry: RemoteEntry) -> bool:
    """Whether `entry` carries a signature that `key` made over exactly this entry."""
    if entry.signature is None:
        return False
    return hmac.compare_digest(sign(key, entry.entry_bytes()), entry.signature)
