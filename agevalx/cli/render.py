"""Rendering results and errors for people (rich) and for scripts (`--json`)."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console

    from agevalx.environments.owners import ReapReport
    from agevalx.errors import AgevalError


class _LazyConsole:
    """A rich Console made on first use, so importing the commands does not import rich."""

    def __init__(self, *, to_stderr: bool) -> None:
        self._to_stderr = to_stderr
        self._console: Console | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.console(), name)

    def console(self) -> Console:
        if self._console is None:
            from rich.console import Console

            if self._to_stderr:
                self._console = Console(stderr=True, highlight=False, soft_wrap=True)
            else:
                # Piped output is read by scripts and people alike: never truncate it to 80
                # columns.
                width = None if sys.stdout.isatty() else 200
                self._console = Console(highlight=False, soft_wrap=True, width=width)
        return self._console


stdout = cast("Console", _LazyConsole(to_stderr=False))
stderr = cast("Console", _LazyConsole(to_stderr=True))


def real_console(console: Console) -> Console:
    """The Console behind `stdout` or `stderr`, for rich objects that take one (a Live)."""
    return console.console() if isinstance(console, _LazyConsole) else console


def print_json(document: dict[str, Any]) -> None:
    sys.stdout.write(json_text(document))


def json_text(document: dict[str, Any]) -> str:
    """`document` as `--json` prints it: sorted keys, one line per top-level field and one per
    item of a top-level list, each written compactly.

    Still read at a glance (and grepped, one node per line), but written by the C encoder:
    fully indented output goes through Python's pure-Python encoder, which cost more than
    planning a cached graph of thousands of nodes.
    """
    if not document:
        return "{}\n"
    encode = _compact_encoder()
    fields = []
    for name in sorted(document):
        value = document[name]
        if isinstance(value, list) and value:
            text = "[\n" + ",\n".join(f"    {encode(item)}" for item in value) + "\n  ]"
        else:
            text = encode(value)
        fields.append(f"  {encode(name)}: {text}")
    return "{\n" + ",\n".join(fields) + "\n}\n"


def _compact_encoder() -> Callable[[Any], str]:
    """`json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode`, with one C encoder made
    for every item rather than one per call (that making was three quarters of the cost of a
    listing of thousands of nodes); the plain method where the C encoder is not there."""
    encoder = json.JSONEncoder(sort_keys=True, ensure_ascii=False)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return encoder.encode
    strings = json.encoder.encode_basestring
    try:  # (markers, default, encoder, indent, key_sep, item_sep, sort_keys, skipkeys, allow_nan)
        chunks = make(None, encoder.default, strings, None, ": ", ", ", True, False, True)
    except TypeError:  # another Python's private signature
        return encoder.encode
    return lambda value: "".join(chunks(value, 0))


def render_error(error: AgevalError, *, as_json: bool) -> None:
    """One or two lines for a person on stderr; one JSON object on stdout for a script."""
    if as_json:
        print_json({"ok": False, "error": error.to_dict()})
        return
    from rich.markup import escape

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
