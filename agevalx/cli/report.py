"""`ageval report`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from agevalx.cli.options import CacheDirOption, JsonOption, RemoteOption, open_layered_store
from agevalx.cli.render import print_json, stdout
from agevalx.limits import ReportFormat

SourceArgument = Annotated[
    Path,
    typer.Argument(
        help="A dataset directory, a job directory (.ageval/suite-runs/<job_id>) or a "
        "summary.json.",
        show_default=False,
    ),
]
FormatOption = Annotated[
    ReportFormat, typer.Option("--format", "-f", help="How to write the report.")
]
OutputOption = Annotated[
    Optional[Path],  # noqa: UP045 - typer needs Optional here
    typer.Option("--output", "-o", help="Write the report to this file instead of stdout."),
]
JobOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--job", help="Only this job of the dataset (a directory name under suite-runs)."),
]


def report(
    source: SourceArgument,
    output_format: FormatOption = "table",
    output: OutputOption = None,
    job: JobOption = None,
    remote: RemoteOption = None,
    cache_dir: CacheDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """A leaderboard of results: one row per task, agent and model, and one overall row per
    agent and model (n, PASS/FAIL/ERROR, pass rate, pass@k, pass^k, avg score, limits hit).

    Every row names the config digest and the run/evaluate node keys its numbers come from.
    The same results always give the same bytes.

    With --remote NAME, the report is the dataset's leaderboard node, made from the job
    records on the remote alone (the dataset directory only names the dataset): a fresh
    machine renders it without any result file, image or container. It carries provenance
    (the ageval release, the dataset's id, version and digest).

    Exit codes: 0 written, 1 no or unreadable results, 2 usage error.
    """
    from agevalx.cache.layered import LayeredStore
    from agevalx.operations.share import remote_leaderboard
    from agevalx.reports import build_report, render_report, save_report

    leaderboard_key: str | None = None
    if remote is not None:
        with open_layered_store(cache_dir, remote) as store:
            assert isinstance(store, LayeredStore)
            built, leaderboard_key, _ = remote_leaderboard(store, source, job)
    else:
        built = build_report(source, job=job)
    text = render_report(built, output_format)
    if output is not None:
        save_report(text, output)
    if as_json:
        print_json(
            {
                "ok": True,
                "format": output_format,
                "output": output.as_posix() if output else None,
                "leaderboard_key": leaderboard_key,
                "report": built.model_dump(mode="json"),
            }
        )
    elif output is not None:
        rows = len(built.overall) + len(built.tasks)
        stdout.print(f"{output_format} report, {rows} rows -> {output.as_posix()}", markup=False)
    else:
        sys.stdout.write(text)
