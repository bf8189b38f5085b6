"""`ageval view`."""

from __future__ import annotations

import json
import sys
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from agevalx.cli.options import CacheDirOption, JsonOption
from agevalx.cli.render import print_json, stdout
from agevalx.errors import UsageError

if TYPE_CHECKING:
    from agevalx.view import ViewServer

SourceArgument = Annotated[
    Path,
    typer.Argument(
        help="A dataset directory, or a job directory (.ageval/suite-runs/<job_id>).",
        show_default="the current directory",
    ),
]
BundleOption = Annotated[
    Optional[Path],  # noqa: UP045 - typer needs Optional here
    typer.Option(
        "--bundle",
        help="Write the views as a static site into this directory (open its index.html) "
        "instead of serving them.",
    ),
]
PortOption = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option(
        "--port", min=0, max=65535, help="Serve on this port of 127.0.0.1 (default: any)."
    ),
]
OpenOption = Annotated[
    Optional[bool],  # noqa: UP045
    typer.Option(
        "--open/--no-open",
        help="Open the URL in a browser (default: when run in a terminal).",
        show_default=False,
    ),
]


def view(
    source: SourceArgument = Path("."),
    bundle: BundleOption = None,
    port: PortOption = None,
    open_browser: OpenOption = None,
    cache_dir: CacheDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Look at results in a browser: the grid of tasks x (agent, model, job), each attempt
    (prompt, transcript, terminal actions, file changes, evaluation, node keys, lineage) and
    each job's graph.

    Serves on 127.0.0.1 only and prints the URL; Ctrl-C stops it. With --bundle, writes the
    same pages as files that open from file:// and can be shared.
    """
    from agevalx.view import ViewServer, open_site, write_bundle

    if bundle is not None and port is not None:
        raise UsageError(
            "view_port_with_bundle", "--port serves pages; --bundle writes them", field="--port"
        )
    site = open_site(source, cache_dir)
    try:
        if bundle is not None:
            written = write_bundle(site, bundle)
            if as_json:
                print_json(
                    {
                        "ok": True,
                        "bundle": written.directory.as_posix(),
                        "index": written.index.as_posix(),
                        "pages": written.pages,
                        "attempts": written.attempts,
                        "raw_files": written.raw_files,
                        "bytes": written.bytes,
                    }
                )
            else:
                stdout.print(
                    f"{written.pages} pages ({written.attempts} attempts), "
                    f"{written.raw_files} raw files -> {written.index.as_posix()}",
                    markup=False,
                )
            return
        _serve(ViewServer(site, port or 0), open_browser, as_json)
    finally:
        site.close()


def _serve(server: ViewServer, open_browser: bool | None, as_json: bool) -> None:
    if as_json:  # one line, read while the server runs
        sys.stdout.write(json.dumps({"ok": True, "url": server.url}, sort_keys=True) + "\n")
    else:
        stdout.print(f"ageval view: {server.url}  (Ctrl-C stops it)", markup=False)
    sys.stdout.flush()
    if open_browser if open_browser is not None else sys.stdout.isatty():
        webbrowser.open(server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        if not as_json:
            stdout.print("stopped", markup=False)
    finally:
        server.server_close()
