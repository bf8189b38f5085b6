"""`ageval checkpoints`."""

from __future__ import annotations

from typing import Annotated

import typer

from agevalx.cli.options import DatasetArgument, JsonOption
from agevalx.cli.render import print_json, stdout


def checkpoints(
    dataset: DatasetArgument,
    run: Annotated[str, typer.Option("--run", help="The attempt id.")],
    as_json: JsonOption = False,
) -> None:
    """List the cut points of an attempt: what --fork --checkpoint <seq> can start from."""
    from rich.table import Table

    from agevalx.operations.recovery import list_checkpoints

    points = list_checkpoints(dataset, run)
    if as_json:
        print_json({"ok": True, "attempt_id": run, "checkpoints": [p.model_dump() for p in points]})
        return
    table = Table(box=None, pad_edge=False)
    for column in ("seq", "step", "time", "snapshot (workspace / home)", "bytes"):
        table.add_column(column)
    for point in points:
        table.add_row(
            str(point.seq),
            "-" if point.step is None else str(point.step),
            point.time,
            f"{point.workspace} / {point.home}",
            str(point.bytes),
        )
    stdout.print(table)
