"""Options shared by several commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from agevalx.cache.location import resolve_cache_dir
from agevalx.cache.store import CacheStore

JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")]
CacheDirOption = Annotated[
    Optional[Path],  # noqa: UP045 - typer needs Optional here
    typer.Option(
        "--cache-dir",
        help="Cache directory (default: $AGEVAL_CACHE_DIR, else ~/.cache/ageval).",
        show_default=False,
    ),
]
TaskOption = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option("--task", "-t", help="Only this task (repeatable); all tasks when omitted."),
]
AgentOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(help="Bind every role to this agent (a profile id, or 'oracle')."),
]
ModelOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(help="Model id for --agent (written to model.id)."),
]
ProfilesOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(help="Use this profiles file instead of the dataset's profiles.yaml."),
]
DatasetArgument = Annotated[
    Path, typer.Argument(help="The dataset directory (holds ageval.yaml).", show_default=False)
]


def open_store(cache_dir: Path | None) -> CacheStore:
    return CacheStore(resolve_cache_dir(str(cache_dir) if cache_dir else None))
