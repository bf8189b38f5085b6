"""`ageval cache ls|du|verify|gc`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.table import Table

from agevalx.cache.gc import DEFAULT_KEEP_NEWEST, collect_garbage
from agevalx.cache.usage import disk_usage, list_actions
from agevalx.cache.verify import verify_cache
from agevalx.cli.options import CacheDirOption, JsonOption, open_store
from agevalx.cli.render import print_json, stdout

app = typer.Typer(help="Inspect and maintain the content-addressed cache.")


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


@app.command(name="ls")
def list_command(
    kind: Annotated[
        Optional[str],  # noqa: UP045 - typer needs Optional here
        typer.Option(help="Only this node kind (lock, image, run, evaluate, ...)."),
    ] = None,
    cache_dir: CacheDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """List cached nodes (action entries): kind, key, when, size, and whether complete."""
    with open_store(cache_dir) as store:
        entries = list_actions(store, kind)
    if as_json:
        print_json({"ok": True, "actions": [entry.model_dump(mode="json") for entry in entries]})
        return
    table = Table(box=None, pad_edge=False)
    for column in ("kind", "key", "created", "outputs", "size", "complete"):
        table.add_column(column)
    for entry in entries:
        table.add_row(
            entry.kind,
            entry.key,
            entry.created.strftime("%Y-%m-%d %H:%M:%S"),
            str(entry.outputs),
            _size(entry.output_bytes),
            "yes" if entry.complete else "[red]no[/]",
        )
    stdout.print(table)
    stdout.print(f"{len(entries)} entries")


@app.command()
def du(cache_dir: CacheDirOption = None, as_json: JsonOption = False) -> None:
    """Show the cache's disk usage per area and per node kind."""
    with open_store(cache_dir) as store:
        usage = disk_usage(store)
    if as_json:
        print_json({"ok": True, **usage.model_dump(mode="json"), "total_bytes": usage.total_bytes})
        return
    stdout.print(f"cache {usage.root}", markup=False)
    rows = [("objects", usage.objects), ("trees", usage.trees), ("tmp", usage.tmp)]
    rows += [(f"actions/{kind}", area) for kind, area in sorted(usage.actions.items())]
    for name, area in rows:
        stdout.print(f"  {name:<20} {area.files:>8} files  {_size(area.bytes):>10}", markup=False)
    stdout.print(f"  {'total':<20} {'':>8}        {_size(usage.total_bytes):>10}", markup=False)


@app.command()
def verify(
    remove_corrupt: Annotated[
        bool, typer.Option("--remove-corrupt", help="Delete corrupt files (they become misses).")
    ] = False,
    cache_dir: CacheDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Re-hash every stored object and report corrupt ones (exit 1 when any is found)."""
    with open_store(cache_dir) as store:
        report = verify_cache(store, remove_corrupt=remove_corrupt)
    if as_json:
        print_json({"ok": report.ok, **report.model_dump(mode="json")})
    else:
        stdout.print(
            f"checked {report.objects_checked} objects, {report.trees_checked} trees, "
            f"{report.actions_checked} action entries",
            markup=False,
        )
        for bad in report.corrupt:
            stdout.print(f"corrupt {bad.area} {bad.name}: {bad.reason}", markup=False)
        for broken in report.broken_actions:
            stdout.print(
                f"incomplete {broken.kind}/{broken.key}: missing {len(broken.missing)}",
                markup=False,
            )
        if report.removed:
            stdout.print(f"removed {report.removed} corrupt files", markup=False)
    if not report.ok:
        raise typer.Exit(1)


@app.command()
def gc(
    keep_newest: Annotated[
        int, typer.Option(min=0, help="Newest complete entries kept per kind besides refs.")
    ] = DEFAULT_KEEP_NEWEST,
    cache_dir: CacheDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete what no ref reaches, keeping the newest entries of each kind."""
    with open_store(cache_dir) as store:
        report = collect_garbage(store, keep_newest_per_kind=keep_newest)
    if as_json:
        print_json({"ok": True, **report.model_dump(mode="json")})
        return
    stdout.print(
        f"removed {report.actions_removed} entries, {report.trees_removed} trees, "
        f"{report.blobs_removed} blobs, {report.tmp_removed} tmp files "
        f"({_size(report.bytes_freed)}); kept {report.actions_kept} entries",
        markup=False,
    )
