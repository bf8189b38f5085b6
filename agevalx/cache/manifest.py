"""The cache's file formats: tree manifests, action entries and refs.

Each format is a pydantic model serialised as canonical JSON (`agevalx.hashing`). Models
validate everything a malicious or damaged file could get wrong, so code holding a parsed
manifest can trust its paths and names.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from functools import cached_property
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StringConstraints,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)

from agevalx.cache.errors import CacheError
from agevalx.hashing import canonical_json, digest_bytes

FILE_MODES = (0o644, 0o755)
DIR_MODE = 0o755
SYMLINK_MODE = 0o777

Digest = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{32}$")]
Kind = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]*$")]
OutputName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")]
RefTarget = Annotated[str, StringConstraints(pattern=r"^([a-z][a-z0-9_-]*/)?[0-9a-f]{32}$")]

_MODEL_CONFIG = ConfigDict(
    extra="forbid",
    frozen=True,
    strict=True,
    validate_by_name=True,
    serialize_by_alias=True,
    defer_build=True,
)
"""`defer_build`: each format's validator is built when first used, not by every command
that imports the cache (most read entries; few read refs)."""


def relative_path_problem(path: str) -> str | None:
    """Say why `path` is not a safe relative POSIX path, or return None if it is."""
    if not path:
        return "path is empty"
    if path.startswith("/"):
        return "path is absolute"
    if "\x00" in path:
        return "path contains a NUL byte"
    if any(part in ("", ".", "..") for part in path.split("/")):
        return "path has an empty, '.' or '..' component"
    return None


class TreeEntry(BaseModel):
    """One file, symlink or directory of a tree."""

    model_config = _MODEL_CONFIG

    path: str
    """Relative POSIX path inside the tree: no leading `/`, no `.`, `..` or empty parts."""
    type: Literal["file", "symlink", "dir"]
    """What the entry is. Symlinks are recorded, never followed."""
    digest: Digest | None = None
    """xxh3-128 of the file's bytes (files only): the blob holding its content."""
    size: int = Field(ge=0)
    """Bytes: file length, UTF-8 length of a symlink's target, 0 for a directory."""
    mode: int
    """Normalised permission bits: 0o755 or 0o644 for files, 0o755 dirs, 0o777 symlinks."""
    target: str | None = None
    """The symlink's target exactly as stored in the link (symlinks only)."""

    @field_validator("path")
    @classmethod
    def _safe_path(cls, path: str) -> str:
        problem = relative_path_problem(path)
        if problem:
            raise ValueError(f"{problem}: {path!r}")
        return path

    @model_validator(mode="after")
    def _fields_match_type(self) -> Self:
        expected = {
            "file": (self.digest is not None, self.target is None, self.mode in FILE_MODES),
            "dir": (self.digest is None, self.target is None, self.mode == DIR_MODE),
            "symlink": (
                self.digest is None,
                bool(self.target) and "\x00" not in (self.target or ""),
                self.mode == SYMLINK_MODE,
            ),
        }[self.type]
        if not all(expected):
            raise ValueError(f"fields of {self.path!r} do not fit type {self.type!r}")
        return self


class TreeManifest(BaseModel):
    """A directory snapshot: every entry, sorted by path. Its digest names the tree."""

    model_config = _MODEL_CONFIG

    schema_version: Literal[1] = Field(default=1, alias="schema")
    """Version of this format; readers refuse versions they do not know."""
    entries: tuple[TreeEntry, ...] = ()
    """Entries sorted by path (code point order); every parent directory is listed."""

    @model_validator(mode="after")
    def _sorted_and_nested_in_dirs(self) -> Self:
        types: dict[str, str] = {}
        previous = ""
        for entry in self.entries:
            if types and entry.path <= previous:
                raise ValueError(f"entries not sorted or duplicated at {entry.path!r}")
            parent = entry.path.rpartition("/")[0]
            if parent and types.get(parent) != "dir":
                raise ValueError(f"parent of {entry.path!r} is not a listed directory")
            types[entry.path] = entry.type
            previous = entry.path
        return self

    def canonical_bytes(self) -> bytes:
        """The exact bytes stored in the cache and hashed into the tree digest."""
        return canonical_json(self.model_dump(mode="json", exclude_none=True))

    @cached_property
    def digest(self) -> str:
        """The tree digest: xxh3-128 of `canonical_bytes()`."""
        return digest_bytes(self.canonical_bytes())

    def files(self) -> Iterator[TreeEntry]:
        """The regular-file entries, in path order."""
        return (entry for entry in self.entries if entry.type == "file")

    @property
    def total_size(self) -> int:
        """Sum of the sizes of the regular files."""
        return sum(entry.size for entry in self.files())

    @classmethod
    def from_bytes(cls, data: bytes, *, source: str | None = None) -> TreeManifest:
        """Parse a stored manifest, raising `cache_invalid_tree` if it is malformed."""
        try:
            return cls.model_validate_json(data)
        except ValidationError as exc:
            raise CacheError(
                "cache_invalid_tree", f"malformed tree manifest: {exc}", file=source
            ) from exc


class OutputRef(BaseModel):
    """One named output of an action: a blob or a tree, by digest."""

    model_config = _MODEL_CONFIG

    digest: Digest
    """Digest of the blob, or of the tree manifest."""
    type: Literal["blob", "tree"]
    """`blob` names `objects/`, `tree` names `trees/` (whose files name more blobs)."""


class ActionManifest(BaseModel):
    """An action entry: the result of computing one graph node."""

    model_config = _MODEL_CONFIG

    schema_version: Literal[1] = Field(default=1, alias="schema")
    """Version of this format; readers refuse versions they do not know."""
    kind: Kind
    """The node kind (a rule name such as `run` or `evaluate`)."""
    key: Digest
    """The node key: xxh3-128 over the node's rule, inputs and parents' keys."""
    created: AwareDatetime
    """When the entry was written (UTC); gc keeps the newest entries per kind."""
    outputs: dict[OutputName, OutputRef]
    """What the node produced, by output name."""
    meta: dict[str, JsonValue] = Field(default_factory=dict)
    """Small JSON facts about the computation (timings, status); never part of a key."""

    @field_serializer("created")
    def _utc_iso(self, created: datetime) -> str:
        text = created.astimezone(UTC).isoformat(timespec="microseconds")
        return text.replace("+00:00", "Z")

    @classmethod
    def create(
        cls,
        kind: str,
        key: str,
        outputs: Mapping[str, OutputRef],
        meta: Mapping[str, Any] | None = None,
    ) -> ActionManifest:
        """Build a new entry stamped with the current time, raising `cache_invalid_action`."""
        try:
            manifest = cls(
                kind=kind,
                key=key,
                created=datetime.now(UTC),
                outputs=dict(outputs),
                meta=dict(meta or {}),
            )
            manifest.canonical_bytes()
        except (ValidationError, ValueError) as exc:
            raise CacheError("cache_invalid_action", f"invalid action entry: {exc}") from exc
        return manifest

    def canonical_bytes(self) -> bytes:
        """The exact bytes written to the action file."""
        return canonical_json(self.model_dump(mode="json"))

    @classmethod
    def from_bytes(cls, data: bytes, *, source: str | None = None) -> ActionManifest:
        """Parse a stored entry, raising `cache_invalid_action` if it is malformed."""
        try:
            return cls.model_validate_json(data)
        except ValidationError as exc:
            raise CacheError(
                "cache_invalid_action", f"malformed action entry: {exc}", file=source
            ) from exc


class RefFile(BaseModel):
    """A gc root: the action entries and objects it keeps alive."""

    model_config = _MODEL_CONFIG

    schema_version: Literal[1] = Field(default=1, alias="schema")
    """Version of this format; readers refuse versions they do not know."""
    targets: tuple[RefTarget, ...] = ()
    """Sorted, unique: `kind/key` for an action entry, a bare digest for a blob or tree."""

    def canonical_bytes(self) -> bytes:
        return canonical_json(self.model_dump(mode="json"))
