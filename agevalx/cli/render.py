"""Rendering results and errors for people (rich) and for scripts (`--json`)."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape

from agevalx.environments.owners import ReapReport
from agevalx.errors import AgevalError

# Piped output is read by scripts and people alike: never truncate it to 80 columns.
_PIPED_WIDTH = None if sys.stdout.isatty() else 200
stdout = Console(highlight=False, soft_wrap=True, width=_PIPED_WIDTH)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


def print_json(document: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def render_error(error: AgevalError, *, as_json: bool) -> None:
    """One or two lines for a person on stderr; one JSON object on stdout for a script."""
    if as_json:
        print_json({"ok": False, "error": error.to_dict()})
        return
    where = ":".join(part for part in (error.file, error.field) if part)
    location = f"{where}: " if where else ""
    stderr.print(f"[bold red]error[/] {escape(f'[{error.code}] {location}{error.message}')}")
    if error.hint:
        stderr.print(f"  hint: {error.hint}", markup=False)


def render_reaped(report: ReapReport) -> None:
    """One line on stderr naming what dead ageval processes had left and was removed."""
    if not report.removed:
        return
    parts = [
        f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"
        for items, noun in (
            (report.containers, "container"),
            (report.networks, "network"),
            (report.volumes, "volume"),
        )
        if items
    ]
    pids = ", ".join(str(pid) for pid in report.owners)
    stderr.print(
        f"removed {', '.join(parts)} left by ageval processes that died (pid {pids})",
        markup=False,
    )
