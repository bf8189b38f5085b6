"""The `ageval` command line: thin commands that parse, call one library function, render.

This package's own module is kept light: the console script first asks the command memo
(`agevalx.cli.memo`) whether the command's last output still holds, and imports the parser
(`agevalx.cli.app`) only when it does not.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run one command (`argv`, else the process's arguments); returns the exit code (0 ok,
    1 failure, 2 usage). Called in-process (by tests, by programs), it never reads or writes
    the command memo."""
    from agevalx.cli.app import main as run_command

    return run_command(argv)


def run() -> None:
    """The console script of an `ageval` installed before it was `console` (its script still
    imports `agevalx.cli:run`)."""
    console()


def console() -> None:
    """The console script: the command memo's kept output when it still holds, else the
    command, recorded for the memo when it may be kept (see `agevalx.cli.memo`)."""
    from agevalx.cli import memo

    sys.exit(memo.run_remembered(sys.argv[1:], main))
