"""`ageval view`: a web viewer of a dataset's jobs, attempts, their graph and lineage.

site = open_site(Path("my-dataset"))               # or a job dir (.ageval/suite-runs/<id>)
write_bundle(site, Path("bundle"))                 # static pages: open bundle/index.html
ViewServer(site).serve_forever()                   # or serve them on 127.0.0.1
"""

from __future__ import annotations

from pathlib import Path

from agevalx.cache.location import resolve_cache_dir
from agevalx.view.bundle import BundleReport, write_bundle
from agevalx.view.errors import ViewError
from agevalx.view.server import ViewServer
from agevalx.view.site import Site
from agevalx.view.source import ViewSource, resolve_source


def open_site(path: Path, cache_dir: Path | None = None) -> Site:
    """The viewer's site for a dataset or job directory; reads the results once, so that a
    broken or missing result is reported before anything is served or written."""
    source = resolve_source(path, resolve_cache_dir(str(cache_dir) if cache_dir else None))
    site = Site(source)
    try:
        site.grid()
    except BaseException:
        site.close()
        raise
    return site


__all__ = [
    "BundleReport",
    "Site",
    "ViewError",
    "ViewServer",
    "ViewSource",
    "open_site",
    "write_bundle",
]
