"""Where the local cache lives: `--cache-dir`, then `$AGEVAL_CACHE_DIR`, then XDG."""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "AGEVAL_CACHE_DIR"


def default_cache_dir() -> Path:
    """`$AGEVAL_CACHE_DIR`, else `$XDG_CACHE_HOME/ageval`, else `~/.cache/ageval`.

    Empty variables count as unset, and a relative `XDG_CACHE_HOME` is ignored, as the
    XDG Base Directory specification requires.
    """
    explicit = os.environ.get(ENV_VAR)
    if explicit:
        return Path(explicit).expanduser().absolute()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "ageval"
    return Path.home() / ".cache" / "ageval"


def resolve_cache_dir(flag: str | None) -> Path:
    """The cache directory to use: an explicit `--cache-dir` wins over the environment."""
    if flag:
        return Path(flag).expanduser().absolute()
    return default_cache_dir()


def default_state_dir() -> Path:
    """`$XDG_STATE_HOME/ageval`, else `~/.local/state/ageval`: the user's own files that are
    not a cache (crash reports, plan memos); an empty or relative variable counts as unset."""
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "state"
    return base / "ageval"
