"""Docker names ageval derives from task ids: container names, image tags, compose projects.

Task ids may hold any character a directory name can (`täsk-ü`), Docker names may not:

| rule        | Docker accepts                        |
| ----------- | ------------------------------------- |
| `container` | `[a-zA-Z0-9][a-zA-Z0-9_.-]*`          |
| `tag`       | `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`   |
| `project`   | `[a-z0-9][a-z0-9_-]*` (compose)       |

`docker_name` keeps a name readable (accents are dropped: `täsk-ü` becomes `task-u`),
replaces every other character it cannot keep by `-`, and, whenever it changed anything,
appends the first hex digits of the original's digest, so that two ids differing only in
replaced characters still get two names.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

from agevalx.hashing import digest_bytes

Rule = Literal["container", "tag", "project"]

_UNKEPT = {
    "container": re.compile(r"[^A-Za-z0-9_.-]+"),
    "tag": re.compile(r"[^A-Za-z0-9_.-]+"),
    "project": re.compile(r"[^a-z0-9_-]+"),
}
_LEADING = {
    "container": re.compile(r"^[^A-Za-z0-9]+"),
    "tag": re.compile(r"^[^A-Za-z0-9_]+"),
    "project": re.compile(r"^[^a-z0-9]+"),
}
MAX_LENGTH = 128
"""Longest name made (Docker's limit for a tag; container names stay readable in `docker ps`)."""
DIGEST_CHARS = 8


def docker_name(text: str, rule: Rule = "container") -> str:
    """`text` as a name Docker accepts under `rule`: unchanged when it already is one (and
    not longer than `MAX_LENGTH`), else readable and suffixed with a digest of `text`."""
    plain = "".join(
        char for char in unicodedata.normalize("NFKD", text) if not unicodedata.combining(char)
    )
    if rule == "project":
        plain = plain.lower()
    kept = _LEADING[rule].sub("", _UNKEPT[rule].sub("-", plain))
    if kept and kept == text and len(text) <= MAX_LENGTH:
        return text
    digest = digest_bytes(text.encode("utf-8", "surrogatepass"))[:DIGEST_CHARS]
    head = kept[: MAX_LENGTH - DIGEST_CHARS - 1].rstrip("-.")
    return f"{head}-{digest}" if head else digest
