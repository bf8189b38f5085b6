"""The `ageval` parser: its commands, and `main`, which runs one and turns what it raised into
an exit code and a coded error (`agevalx.cli.main` is this `main`, behind the command memo)."""

from __future__ import annotations

import os
import sys
import traceback

import typer

from agevalx.cli import agents as agents_command
from agevalx.cli import cache as cache_command
from agevalx.cli import checkpoints as checkpoints_command
from agevalx.cli import graph as graph_command
from agevalx.cli import lint as lint_command
from agevalx.cli import lock as lock_command
from agevalx.cli import mock_model as mock_model_command
from agevalx.cli import replay as replay_command
from agevalx.cli import report as report_command
from agevalx.cli import view as view_command
from agevalx.cli.render import render_error
from agevalx.cli.run import run as run_command_function
from agevalx.errors import AgevalError, UsageError

app = typer.Typer(
    name="ageval",
    help=(
        "Run AI agents on evaluation tasks in Docker, score them, and never pay twice for the "
        "same work: every lock, image, run and evaluation is a cached node keyed by content."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.command(name="lock", no_args_is_help=True)(lock_command.lock)
app.command(name="run", no_args_is_help=True)(run_command_function)
app.command(name="lint", no_args_is_help=True)(lint_command.lint)
app.command(name="report", no_args_is_help=True)(report_command.report)
app.command(name="checkpoints", no_args_is_help=True)(checkpoints_command.checkpoints)
app.command(name="replay", no_args_is_help=True)(replay_command.replay)
app.command(name="view")(view_command.view)
app.command(name="mock-model", no_args_is_help=True)(mock_model_command.mock_model)
app.add_typer(graph_command.app, name="graph", no_args_is_help=True)
app.add_typer(cache_command.app, name="cache", no_args_is_help=True)
app.add_typer(agents_command.app, name="agents")


@app.callback()
def _root() -> None:
    """Run AI agents on evaluation tasks in Docker and score them, never paying twice."""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code (0 ok, 1 failure, 2 usage)."""
    args = sys.argv[1:] if argv is None else argv
    as_json = "--json" in args
    try:
        result = app(args=args, prog_name="ageval", standalone_mode=False)
    except typer.Exit as exc:
        return exc.exit_code
    except typer.TyperException as exc:  # the parser's own usage errors (exit code 2)
        if as_json:
            usage = UsageError("usage_error", exc.format_message(), hint="see ageval --help")
            render_error(usage, as_json=True)
        else:
            exc.show()  # type: ignore[attr-defined]
        return exc.exit_code
    except (typer.Abort, KeyboardInterrupt):
        interrupted = AgevalError(
            "interrupted",
            "interrupted; containers were removed and finished work is kept in the cache",
            hint="run the same command again to continue where it stopped",
        )
        render_error(interrupted, as_json=as_json)
        return 130
    except AgevalError as exc:
        render_error(exc, as_json=as_json)
        return exc.exit_code
    except Exception as exc:  # a traceback reaching the user is a bug: say so in one line
        if os.environ.get("AGEVAL_DEBUG"):
            raise
        from agevalx.cli.crash import write_crash_report

        detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
        report = write_crash_report(exc, args)
        where = f"its traceback is in {report}" if report else "rerun with AGEVAL_DEBUG=1"
        error = AgevalError(
            "internal_error",
            detail,
            hint=f"this is a bug in ageval; {where} (please attach it to a bug report)",
        )
        render_error(error, as_json=as_json)
        return 1
    return result if isinstance(result, int) else 0
