"""`ageval cache ls|du|verify|gc|push|pull` and `ageval cache remote add|list|remove`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from agevalx.cli.options import CacheDirOption, JsonOption, open_store
from agevalx.cli.render import print_json, real_console, stderr, stdout
from agevalx.errors import UsageError
from agevalx.limits import DEFAULT_KEEP_NEWEST, REMOTE_ENV

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from agevalx.cache.remote.store import RemoteStore
    from agevalx.cache.store import CacheStore
    from agevalx.cache.transfer import TransferReport
    from agevalx.images.gc import ImageGcReport
    from agevalx.operations.share import ShareReport

app = typer.Typer(help="Inspect and maintain the content-addressed cache.")
remote_app = typer.Typer(help="Configure the shared remotes this cache pushes to and pulls from.")
app.add_typer(remote_app, name="remote", no_args_is_help=True)

RemoteOption = Annotated[
    Optional[str],  # noqa: UP045 - typer needs Optional here
    typer.Option(
        "--remote",
        help=f"A configured remote's name, or a URL (default: ${REMOTE_ENV}, else the only "
        "configured remote).",
        show_default=False,
    ),
]
AllOption = Annotated[bool, typer.Option("--all", help="Every action entry of the cache.")]


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
    from rich.table import Table

    from agevalx.cache.usage import list_actions

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
    from agevalx.cache.usage import disk_usage

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
    from agevalx.operations.verify import verify as verify_store

    with open_store(cache_dir) as store:
        report = verify_store(store, remove_corrupt=remove_corrupt)
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
        for invalid in report.invalid_outputs:
            stdout.print(
                f"invalid {invalid.kind}/{invalid.key} {invalid.output}: {invalid.problem}",
                markup=False,
            )
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
    remote: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--remote", help="Collect this remote (name or URL) instead, from its own refs."
        ),
    ] = None,
    images: Annotated[
        bool,
        typer.Option(
            "--images",
            help="Also remove the Docker images made for this cache that no remaining entry "
            "names (without it they are only listed).",
        ),
    ] = False,
    cache_dir: CacheDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete what no ref reaches, keeping the newest entries of each kind; list (with
    --images, remove) this cache's orphaned Docker images."""
    from agevalx.cache.gc import collect_garbage

    if remote is not None:
        _gc_remote(remote, keep_newest, cache_dir, as_json)
        return
    with open_store(cache_dir) as store:
        report = collect_garbage(store, keep_newest_per_kind=keep_newest)
        orphans = _orphaned_images(store, images)
    if as_json:
        found = None if orphans is None else orphans.model_dump(mode="json")
        print_json({"ok": True, **report.model_dump(mode="json"), "images": found})
        return
    stdout.print(
        f"removed {report.actions_removed} entries, {report.trees_removed} trees, "
        f"{report.blobs_removed} blobs, {report.tmp_removed} tmp files "
        f"({_size(report.bytes_freed)}); kept {report.actions_kept} entries",
        markup=False,
    )
    if orphans is not None:
        _render_images(orphans, removing=images)


def _orphaned_images(store: CacheStore, remove: bool) -> ImageGcReport | None:
    """The image part of gc; None when there is no Docker engine and none was asked for."""
    from agevalx.environments.engine import EnvironmentFailure
    from agevalx.images.gc import collect_images

    try:
        return collect_images(store, remove=remove)
    except EnvironmentFailure:
        if remove:
            raise
        return None


def _render_images(report: ImageGcReport, *, removing: bool) -> None:
    for image in report.removed:
        name = ", ".join(image.tags) or "<untagged>"
        stdout.print(f"removed image {image.id[7:19]} {name} ({_size(image.size)})", markup=False)
    if removing:
        left = len(report.orphaned) - len(report.removed)
        kept = f"; {left} in use by a container, kept" if left else ""
        stdout.print(f"removed {len(report.removed)} orphaned images{kept}", markup=False)
    elif report.orphaned:
        stdout.print(
            f"{len(report.orphaned)} orphaned images ({_size(report.orphaned_bytes)}) that no "
            "entry names: remove them with ageval cache gc --images",
            markup=False,
        )


def _gc_remote(name: str, keep_newest: int, cache_dir: Any, as_json: bool) -> None:
    from agevalx.cache.remote.config import open_remote
    from agevalx.cache.remote.gc import collect_remote_garbage

    with open_store(cache_dir) as store, open_remote(store, name) as remote:
        report = collect_remote_garbage(remote, keep_newest_per_kind=keep_newest)
    if as_json:
        print_json({"ok": True, **report.model_dump(mode="json")})
        return
    stdout.print(
        f"remote {report.remote}: removed {report.entries_removed} entries, "
        f"{report.trees_removed} trees, {report.blobs_removed} blobs "
        f"({_size(report.bytes_freed)}); kept {report.entries_kept} entries",
        markup=False,
    )


DatasetOption = Annotated[
    Optional[Path],  # noqa: UP045 - typer needs Optional here
    typer.Argument(
        help="A dataset directory: its jobs (a pull also writes its .ageval/ views).",
        show_default=False,
    ),
]
JobIdOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--job", help="Only this job (its id: a suite-runs directory name)."),
]


@app.command(name="push")
def push_command(
    dataset: DatasetOption = None,
    job: JobIdOption = None,
    everything: AllOption = False,
    remote: RemoteOption = None,
    cache_dir: CacheDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Upload a dataset's jobs, one job, or (--all) every cached node, with what they reach,
    that the remote lacks."""
    from agevalx.cache.remote.config import open_remote
    from agevalx.cache.transfer import all_entries, push, push_refs
    from agevalx.operations.share import dataset_id_of, push_jobs

    _require_selection(dataset, job, everything, "push")
    with open_store(cache_dir) as store, open_remote(store, remote) as opened:
        if everything:
            with _progress_bar(as_json) as bar:
                report = push(store, opened, all_entries(store), progress=bar)
            refs = push_refs(store, opened)
            _render_transfer(report, opened, as_json, refs=refs)
            return
        with _progress_bar(as_json) as bar:
            shared = push_jobs(
                store,
                opened,
                dataset_id=dataset_id_of(dataset) if dataset is not None else None,
                job_id=job,
                progress=bar,
            )
        _render_share(shared, opened, as_json)


@app.command(name="pull")
def pull_command(
    dataset: DatasetOption = None,
    job: JobIdOption = None,
    everything: AllOption = False,
    remote: RemoteOption = None,
    cache_dir: CacheDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Download a dataset's jobs (and write its .ageval/ views), one job, or (--all) every
    node of the remote, with what they reach, that this cache lacks."""
    from agevalx.cache.remote.config import open_remote
    from agevalx.cache.transfer import all_entries, pull
    from agevalx.operations.share import dataset_id_of, pull_jobs

    _require_selection(dataset, job, everything, "pull")
    with open_store(cache_dir) as store, open_remote(store, remote) as opened:
        if everything:
            with _progress_bar(as_json) as bar:
                report = pull(store, opened, all_entries(opened), progress=bar)
            _render_transfer(report, opened, as_json)
            return
        with _progress_bar(as_json) as bar:
            shared = pull_jobs(
                store,
                opened,
                dataset=dataset,
                dataset_id=dataset_id_of(dataset) if dataset is not None else None,
                job_id=job,
                progress=bar,
            )
        _render_share(shared, opened, as_json)


def _require_selection(dataset: Path | None, job: str | None, everything: bool, verb: str) -> None:
    if everything and (dataset is not None or job is not None):
        raise UsageError(
            "usage_error",
            f"--all {verb}es every node: give it no DATASET and no --job",
            field="--all",
        )
    if not everything and dataset is None and job is None:
        raise UsageError(
            "usage_error",
            f"say what to {verb}: a DATASET directory, --job ID, or --all",
            hint=f"ageval cache {verb} DATASET moves the dataset's jobs that the other side lacks",
        )


def _render_share(shared: ShareReport, remote: RemoteStore, as_json: bool) -> None:
    if as_json:
        document: dict[str, Any] = {
            "ok": shared.transfer.ok and not shared.problems,
            **shared.transfer.model_dump(mode="json"),
            "jobs": shared.jobs,
            "views": shared.views,
            "problems": shared.problems,
            "remote_stats": remote.stats.model_dump(mode="json"),
        }
        print_json(document)
        if not document["ok"]:
            raise typer.Exit(1)
        return
    stdout.print(f"jobs: {', '.join(shared.jobs)}", markup=False)
    if shared.views:
        stdout.print(f"wrote the views of {len(shared.views)} attempts", markup=False)
    for problem in shared.problems:
        stderr.print(f"skipped job ref {problem}", markup=False)
    _render_transfer(shared.transfer, remote, as_json=False)
    if shared.problems:
        raise typer.Exit(1)


class _Bar:
    """A rich progress bar fed by `transfer` (objects and entries done, bytes moved)."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.task: TaskID | None = None

    def start(self, total: int) -> None:
        self.task = self.progress.add_task("transfer", total=total)

    def advance(self, nbytes: int) -> None:
        if self.task is not None:
            self.progress.advance(self.task)


@contextmanager
def _progress_bar(as_json: bool) -> Iterator[_Bar | None]:
    """A progress bar on stderr when it is a terminal (and not --json), else None."""
    if as_json or not stderr.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=real_console(stderr), transient=True) as progress:
        yield _Bar(progress)


def _render_transfer(
    report: TransferReport, remote: RemoteStore, as_json: bool, refs: int | None = None
) -> None:
    stats = remote.stats
    if as_json:
        document: dict[str, Any] = {"ok": report.ok, **report.model_dump(mode="json")}
        document["remote_stats"] = stats.model_dump(mode="json")
        if refs is not None:
            document["refs"] = refs
        print_json(document)
    else:
        verb, where = ("pushed", "to") if report.direction == "push" else ("pulled", "from")
        stdout.print(
            f"{verb} {report.entries_copied} entries and {report.objects_copied} objects "
            f"({_size(report.bytes_copied)}) {where} {report.remote} in {report.seconds:.1f}s; "
            f"already there: {report.entries_present} entries, {report.objects_present} objects"
            + (f"; {refs} refs" if refs else "")
            + (
                "; this cache pushed them there before (remote unchanged since)"
                if report.remembered
                else ""
            ),
            markup=False,
        )
        for skipped in report.skipped:
            stderr.print(f"skipped {skipped.action}: {skipped.reason}", markup=False)
        for warning in stats.warnings:
            stderr.print(f"warning [{warning.code}] {warning.message}", markup=False)
    if not report.ok:
        raise typer.Exit(1)


@remote_app.command(name="add")
def remote_add(
    name: Annotated[str, typer.Argument(help="A name for the remote.", show_default=False)],
    url: Annotated[
        str,
        typer.Argument(
            help="fsspec URL: s3://bucket/prefix, file:///path, ...", show_default=False
        ),
    ],
    read_only: Annotated[
        bool, typer.Option("--read-only", help="Never upload to it; only read.")
    ] = False,
    option: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--option", "-o", help="A storage option KEY=VALUE (e.g. endpoint_url=...); repeatable."
        ),
    ] = None,
    cache_dir: CacheDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Configure a shared remote for this cache (stored in <cache>/remotes.json)."""
    from agevalx.cache.remote.config import add_remote, parse_option

    options = dict(parse_option(text) for text in option or [])
    with open_store(cache_dir) as store:
        config = add_remote(store, name, url, read_only=read_only, options=options)
    if as_json:
        print_json({"ok": True, "name": name, **config.model_dump(mode="json")})
        return
    mode = "read-only" if config.read_only else "read-write"
    stdout.print(f"remote {name}: {config.url} ({mode})", markup=False)


@remote_app.command(name="list")
def remote_list(cache_dir: CacheDirOption = None, as_json: JsonOption = False) -> None:
    """List the remotes configured for this cache."""
    from rich.table import Table

    from agevalx.cache.remote.config import load_remotes

    with open_store(cache_dir) as store:
        remotes = load_remotes(store)
    if as_json:
        listed = {name: config.model_dump(mode="json") for name, config in remotes.items()}
        print_json({"ok": True, "remotes": listed})
        return
    if not remotes:
        stdout.print("no remotes configured (add one with: ageval cache remote add NAME URL)")
        return
    table = Table(box=None, pad_edge=False)
    for column in ("name", "url", "mode", "options"):
        table.add_column(column)
    for name, config in sorted(remotes.items()):
        options = " ".join(f"{key}={value}" for key, value in sorted(config.options.items()))
        table.add_row(name, config.url, "read-only" if config.read_only else "read-write", options)
    stdout.print(table)


@remote_app.command(name="remove")
def remote_remove(
    name: Annotated[str, typer.Argument(help="The remote to forget.", show_default=False)],
    cache_dir: CacheDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Forget a configured remote (nothing on the remote is touched)."""
    from agevalx.cache.remote.config import remove_remote

    with open_store(cache_dir) as store:
        remove_remote(store, name)
    if as_json:
        print_json({"ok": True, "removed": name})
        return
    stdout.print(f"removed remote {name}", markup=False)
