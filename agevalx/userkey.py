"""The user's own signing key for what ageval keeps outside the cache and trusts on sight
(the plan memo, the command memo): 32 random bytes in `$XDG_STATE_HOME/ageval/plans/key`
(else under `~/.local/state`), mode 0600, made on first use. A memo is signed with it
(HMAC-SHA256) and checked before it is read, so no file another user or a dataset wrote can
pass for one."""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
from pathlib import Path

from agevalx.cache.location import default_state_dir

KEY_BYTES = 32
TAG_BYTES = hashlib.sha256().digest_size


def key_path() -> Path:
    return default_state_dir() / "plans" / "key"


def user_key(create: bool) -> bytes | None:
    """The user's signing key (made when `create` and missing); None when it cannot be had,
    or when the file is not the user's own and private."""
    path = key_path()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            found = os.fstat(fd)
            key = os.read(fd, KEY_BYTES + 1)
        finally:
            os.close(fd)
        private = stat.S_IMODE(found.st_mode) & 0o077 == 0 and found.st_uid == os.getuid()
        return key if private and len(key) == KEY_BYTES else None
    except FileNotFoundError:
        if not create:
            return None
    except OSError:
        return None
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:  # another process made it meanwhile
        return user_key(create=False)
    except OSError:
        return None
    key = os.urandom(KEY_BYTES)
    try:
        os.write(fd, key)
    finally:
        os.close(fd)
    return key


def _tag(key: bytes, head: bytes, context: bytes, body: bytes) -> bytes:
    """The HMAC-SHA256 of the header, the context (what the file is for: its name) and the
    body: a memo's body cannot be moved under another name or another kind of memo."""
    mac = hmac.new(key, head, "sha256")
    mac.update(len(context).to_bytes(4, "big") + context)
    mac.update(body)
    return mac.digest()


def signed(key: bytes, head: bytes, body: bytes, context: bytes = b"") -> bytes:
    """`head`, the tag of `head`, `context` and `body`, then `body`: a memo file's bytes."""
    return head + _tag(key, head, context, body) + body


def verified(key: bytes, head: bytes, data: bytes, context: bytes = b"") -> bytes | None:
    """The body of `data` (as `signed` made it with `head` and `context`) if its tag is
    `key`'s; else None."""
    start = len(head) + TAG_BYTES
    if len(data) <= start or not data.startswith(head):
        return None
    tag, body = data[len(head) : start], data[start:]
    return body if hmac.compare_digest(tag, _tag(key, head, context, body)) else None
