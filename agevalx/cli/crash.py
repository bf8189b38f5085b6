"""An unexpected exception's traceback, kept in a file so a failed long job can be reported.

A bug must not cost the user a re-run with `AGEVAL_DEBUG=1` (which may take hours, or not
fail again): the CLI writes the traceback to `crashes/<UTC time>-<pid>.txt` under
`$XDG_STATE_HOME/ageval` (else `~/.local/state/ageval`), readable by its owner only, and
names the file in the error's hint. The file holds what the one-line error already shows
plus the stack's code lines: no local variables, no environment.
"""

from __future__ import annotations

import os
import tempfile
import time
import traceback
from pathlib import Path

from agevalx.cache.location import default_state_dir


def crash_dir() -> Path:
    """Where crash reports go: `$XDG_STATE_HOME/ageval/crashes`, else under `~/.local/state`."""
    return default_state_dir() / "crashes"


def write_crash_report(exc: BaseException, argv: list[str]) -> Path | None:
    """Write `exc`'s traceback (and the command's words) to a new file; its path, or None
    when no directory could take it (the error is still reported, without the file)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    text = "".join(
        [
            f"ageval {' '.join(argv)}\n\n",
            *traceback.format_exception(type(exc), exc, exc.__traceback__),
        ]
    )
    for directory in (crash_dir(), Path(tempfile.gettempdir()) / "ageval-crashes"):
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            path = directory / f"{stamp}-{os.getpid()}.txt"
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8", errors="replace") as out:
                out.write(text)
            return path
        except OSError:
            continue
    return None
