"""Named remotes (`ageval cache remote add|list|remove`) and `$AGEVAL_REMOTE` for scripts.

The configuration is a file of the cache it serves, `<cache>/remotes.json` (canonical JSON
of `RemotesFile`): a remote is something a cache is layered onto, so two cache
directories on one host are two independent "machines". Credentials never go in it: the
fsspec backend reads them from its usual places (for S3, `AWS_*` variables or
`~/.aws`), and options whose name looks like a secret are refused.
"""

from __future__ import annotations

import json
import os
import re
from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
)

from agevalx.cache import layout
from agevalx.cache.atomic import write_atomic
from agevalx.cache.errors import CacheError
from agevalx.cache.remote.entry import signing_key_from_env
from agevalx.cache.remote.store import RemoteStore
from agevalx.cache.store import CacheStore
from agevalx.hashing import canonical_json
from agevalx.limits import REMOTE_ENV as REMOTE_ENV

REMOTES_FILE = "remotes.json"

RemoteName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]
OptionValue = str | int | float | bool
_URL_RE = re.compile(r"[a-z][a-z0-9+.-]*://.+")
_SECRET_RE = re.compile(r"secret|password|token|key", re.IGNORECASE)

_CONFIG = ConfigDict(
    extra="forbid", frozen=True, validate_by_name=True, serialize_by_alias=True,
)  # fmt: skip


class RemoteConfig(BaseModel):
    """One configured remote."""

    model_config = _CONFIG

    url: str
    """fsspec URL of the remote's root: `s3://bucket/prefix`, `file:///srv/cache`, ..."""
    read_only: bool = False
    """Never upload to it: lookups and pulls only."""
    options: dict[str, OptionValue] = Field(default_factory=dict)
    """fsspec storage options (for S3 e.g. `endpoint_url`); never credentials."""

    @field_validator("url")
    @classmethod
    def _has_scheme(cls, url: str) -> str:
        if not _URL_RE.fullmatch(url):
            raise ValueError(f"{url!r} is not a URL with a scheme (s3://..., file:///...)")
        if url.startswith("file://") and not url.startswith("file:///"):
            raise ValueError(f"{url!r}: a file:// URL needs an absolute path (file:///...)")
        return url

    @field_validator("options")
    @classmethod
    def _no_secrets(cls, options: dict[str, OptionValue]) -> dict[str, OptionValue]:
        for name in options:
            if _SECRET_RE.search(name):
                raise ValueError(f"option {name!r} looks like a credential")
        return options


class RemotesFile(BaseModel):
    """`<cache>/remotes.json`: the remotes configured for this cache."""

    model_config = _CONFIG

    schema_version: int = Field(default=1, alias="schema", ge=1, le=1)
    """Version of this format; always 1."""
    remotes: dict[RemoteName, RemoteConfig] = Field(default_factory=dict)
    """Configured remotes by name."""


class ResolvedRemote(BaseModel):
    """The remote a command will use, and how it was chosen."""

    model_config = _CONFIG

    name: str | None
    """The configured name, or None for a URL given directly."""
    config: RemoteConfig
    """Its URL, options and read-only flag."""


def load_remotes(store: CacheStore) -> dict[str, RemoteConfig]:
    """The remotes configured for `store` (none if the file does not exist)."""
    path = store.root / REMOTES_FILE
    try:
        return dict(RemotesFile.model_validate_json(path.read_bytes()).remotes)
    except FileNotFoundError:
        return {}
    except (OSError, ValidationError) as exc:
        raise CacheError(
            "remote_config_invalid",
            f"cannot read the remote configuration: {exc}",
            file=str(path),
            hint="fix the file, or delete it and add the remotes again",
        ) from exc


def add_remote(
    store: CacheStore,
    name: str,
    url: str,
    *,
    read_only: bool = False,
    options: dict[str, OptionValue] | None = None,
) -> RemoteConfig:
    """Configure remote `name`; an existing name is refused (`remote_exists`)."""
    layout.check_ref_name(name)
    remotes = load_remotes(store)
    if name in remotes:
        raise CacheError(
            "remote_exists",
            f"remote {name!r} is already configured ({remotes[name].url})",
            field="name",
            hint=f"remove it first: ageval cache remote remove {name}",
        )
    try:
        remotes[name] = RemoteConfig(url=url, read_only=read_only, options=options or {})
    except ValidationError as exc:
        error = exc.errors()[0]
        field = str(error["loc"][0]) if error["loc"] else "url"
        raise CacheError(
            "remote_invalid_option" if field == "options" else "remote_invalid_url",
            f"remote {name!r}: {error['msg']}",
            field=field,
            hint="credentials come from the environment, never from the remote's options"
            if field == "options"
            else "use a URL such as s3://bucket/prefix or file:///absolute/path",
        ) from exc
    _save(store, remotes)
    return remotes[name]


def remove_remote(store: CacheStore, name: str) -> None:
    """Forget remote `name` (`remote_not_found` if it is not configured)."""
    remotes = load_remotes(store)
    if remotes.pop(name, None) is None:
        raise _not_found(name, remotes)
    _save(store, remotes)


def resolve_remote(store: CacheStore, name_or_url: str | None = None) -> ResolvedRemote:
    """The remote to use: the argument, else `$AGEVAL_REMOTE`, else the only configured one.

    A value containing `://` is a URL (read-write, no options); anything else is a name.
    """
    choice = name_or_url or os.environ.get(REMOTE_ENV) or None
    remotes = load_remotes(store)
    if choice is None:
        if len(remotes) == 1:
            ((name, config),) = remotes.items()
            return ResolvedRemote(name=name, config=config)
        raise CacheError(
            "remote_not_configured",
            "no remote given" + (f"; configured: {', '.join(sorted(remotes))}" if remotes else ""),
            hint=f"pass --remote NAME or URL, set ${REMOTE_ENV}, or: ageval cache remote add",
        )
    if "://" in choice:
        try:
            return ResolvedRemote(name=None, config=RemoteConfig(url=choice))
        except ValidationError as exc:
            raise CacheError("remote_invalid_url", exc.errors()[0]["msg"], field="remote") from exc
    if choice not in remotes:
        raise _not_found(choice, remotes)
    return ResolvedRemote(name=choice, config=remotes[choice])


def open_remote(
    store: CacheStore, name_or_url: str | None = None, *, signing_key: bytes | None = None
) -> RemoteStore:
    """Open the remote `resolve_remote` picks; the signing key defaults to the environment's."""
    chosen = resolve_remote(store, name_or_url)
    return RemoteStore(
        chosen.config.url,
        name=chosen.name,
        read_only=chosen.config.read_only,
        options=chosen.config.options,
        signing_key=signing_key if signing_key is not None else signing_key_from_env(),
    )


def parse_option(text: str) -> tuple[str, OptionValue]:
    """`KEY=VALUE` from the command line; VALUE is a JSON scalar if it parses as one."""
    name, sep, raw = text.partition("=")
    if not sep or not name:
        raise CacheError("remote_invalid_option", f"{text!r} is not KEY=VALUE", field="option")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return name, value if isinstance(value, str | int | float | bool) else raw


def _save(store: CacheStore, remotes: dict[str, RemoteConfig]) -> None:
    document = RemotesFile(remotes=remotes).model_dump(mode="json", by_alias=True)
    write_atomic(store.tmp, store.root / REMOTES_FILE, canonical_json(document))


def _not_found(name: str, remotes: dict[str, RemoteConfig]) -> CacheError:
    known = ", ".join(sorted(remotes)) or "none"
    return CacheError(
        "remote_not_found",
        f"no remote named {name!r} (configured: {known})",
        field="remote",
        hint="list them with: ageval cache remote list",
    )
