"""`ageval agents [list] | build NAME... | export NAME... -o FILE | import FILE`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from agevalx.cli.options import JsonOption
from agevalx.cli.render import print_json, stderr, stdout

app = typer.Typer(
    help="The agents ageval runs from bundles: list them, build their bundles ahead of a "
    "job, move bundles to a machine without npm or PyPI.",
    invoke_without_command=True,
)

NamesArgument = Annotated[list[str], typer.Argument(help="Agent names (see `ageval agents`).")]
OptionalNames = Annotated[
    Optional[list[str]],  # noqa: UP045 - typer needs Optional here
    typer.Argument(help="Agent names (see `ageval agents`).", show_default=False),
]


def _size(count: int | None) -> str:
    return "-" if count is None else f"{count / 1e6:.0f} MB"


@app.callback()
def agents_callback(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List the known agents (same as `ageval agents list`)."""
    if ctx.invoked_subcommand is None:
        list_command(as_json=as_json)


@app.command(name="list")
def list_command(as_json: JsonOption = False) -> None:
    """Each agent: version, the model API it speaks, whether its bundle is built, its size."""
    from rich.table import Table

    from agevalx.operations.agents import list_agents

    infos = list_agents()
    if as_json:
        print_json({"ok": True, "agents": [info.as_json() for info in infos]})
        return
    table = Table(box=None, pad_edge=False)
    for column in ("agent", "version", "api", "key from", "bundle", "size", "what it is"):
        table.add_column(column)
    for info in infos:
        built = "[green]built[/]" if info.built else "not built"
        table.add_row(
            info.name,
            info.version,
            info.api,
            f"${info.key_variable}",
            built,
            _size(info.bytes),
            info.summary,
        )
    stdout.print(table)
    stdout.print(
        "run one: ageval run DATASET --agent NAME --model PROVIDER/MODEL; "
        "build ahead: ageval agents build NAME...",
        markup=False,
    )


@app.command(name="build", no_args_is_help=True)
def build_command(
    names: OptionalNames = None,
    every: Annotated[bool, typer.Option("--all", help="Every agent of the catalog.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Build the named agents' bundles now (npm or PyPI needed), not at the first attempt."""
    from agevalx.agents import catalog
    from agevalx.errors import UsageError
    from agevalx.operations.agents import build_agents

    if every == bool(names):
        raise UsageError(
            "build_names_required",
            "name the agents to build, or pass --all (not both)",
            field="NAME",
            hint="ageval agents build claude-code codex, or ageval agents build --all",
        )
    names = sorted(catalog.agents()) if every else list(names or [])

    def started(name: str) -> None:
        if not as_json:
            stderr.print(f"building the {name} bundle ...", markup=False)

    done = build_agents(names, on_start=started)
    if as_json:
        print_json({"ok": True, "bundles": [vars(item) for item in done]})
        return
    for item in done:
        what = f"built in {item.seconds:.1f} s" if item.built else "already built"
        stdout.print(f"{item.name}: {what} ({item.path})", markup=False)


@app.command(name="export", no_args_is_help=True)
def export_command(
    names: NamesArgument,
    output: Annotated[Path, typer.Option("-o", "--output", help="The tar file to write.")],
    as_json: JsonOption = False,
) -> None:
    """Write built bundles into one tar, for `ageval agents import` on another machine."""
    from agevalx.operations.agents import export_bundles

    exported = export_bundles(names, output)
    if as_json:
        print_json({"ok": True, "output": str(output), "bundles": exported})
        return
    listed = ", ".join(item["name"] for item in exported)
    stdout.print(f"wrote {output}: {listed}", markup=False)


@app.command(name="import", no_args_is_help=True)
def import_command(
    archive: Annotated[Path, typer.Argument(help="A tar written by `ageval agents export`.")],
    as_json: JsonOption = False,
) -> None:
    """Check and install the bundles of an export (each one this ageval would build)."""
    from agevalx.operations.agents import import_bundles

    imported = import_bundles(archive)
    if as_json:
        print_json({"ok": True, "bundles": imported})
        return
    for item in imported:
        what = "imported" if item["imported"] else "already here"
        stdout.print(f"{item['name']}: {what}", markup=False)
