"""`ageval view --bundle DIR`: the site's pages as static files, openable with `file://`.

The bundle holds every page the server would answer (each attempt's further pages too),
the front end, and the raw files the pages link to, so it can be shared as a directory.
It is written beside DIR and moved into place: a reader never sees half a bundle. DIR must
be missing, empty, or an earlier bundle (which is replaced).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from agevalx.view.errors import ViewError
from agevalx.view.render.layout import STATIC_FILES, RawArea
from agevalx.view.site import Page, Site, static

MARKER_FILE = "ageval-view.json"
"""Marks a directory as a bundle, which a later `--bundle` to it may replace."""
MARKER_FORMAT = "ageval.view-bundle/1"


@dataclass(frozen=True)
class BundleReport:
    """What a bundle holds."""

    directory: Path
    pages: int
    attempts: int
    raw_files: int
    bytes: int

    @property
    def index(self) -> Path:
        return self.directory / "index.html"


def write_bundle(site: Site, target: Path) -> BundleReport:
    """Write the site into `target` (see the module docstring)."""
    _check_target(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    staging.chmod(0o755)  # mkdtemp's 0700 would keep a shared bundle from its readers
    try:
        report = _write(site, staging)
        _replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return BundleReport(target, report.pages, report.attempts, report.raw_files, report.bytes)


def _check_target(target: Path) -> None:
    if target.exists() and not target.is_dir():
        raise ViewError(
            "view_bundle_not_a_directory",
            f"{target} exists and is not a directory",
            file=target.as_posix(),
            field="--bundle",
            hint="give a new directory for the bundle",
        )
    if target.is_dir() and any(target.iterdir()) and not (target / MARKER_FILE).is_file():
        raise ViewError(
            "view_bundle_not_empty",
            f"{target} is not empty and holds no earlier bundle",
            file=target.as_posix(),
            field="--bundle",
            hint="give a new or empty directory; an earlier bundle there is replaced",
        )


def _pages(site: Site) -> Iterator[tuple[str, Page]]:
    yield "index.html", site.index()
    grid = site.grid()
    for attempt_id in sorted(grid.results):
        found = site.attempt(attempt_id)
        if found is None:
            continue
        view, page = found
        yield f"attempts/{attempt_id}.html", page
        for part in ("actions", "activity", "transcript"):
            number = 2
            while (further := site.part(view, part, number)) is not None:
                yield f"attempts/{attempt_id}/{part}-{number}.html", further
                number += 1
    for job in grid.jobs:
        graph = site.graph(job.job_id)
        if graph is not None:
            yield f"graph/{job.job_id}.html", graph


def _write(site: Site, root: Path) -> BundleReport:
    pages = attempts = size = 0
    linked: set[tuple[RawArea, str]] = set()
    for relative, page in _pages(site):
        size += _put(root / relative, page.body)
        linked |= page.raw_files
        pages += 1
        attempts += relative.startswith("attempts/") and relative.count("/") == 1
    for name in STATIC_FILES:
        found = static(name)
        assert found is not None
        size += _put(root / "static" / name, found.body)
    copied = 0
    for area, relative in sorted(linked):
        raw = site.raw(area, relative)
        if raw is not None and raw.file is not None:
            destination = root / "raw" / area / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(raw.file, destination)
            size += destination.stat().st_size
            copied += 1
    marker = {"format": MARKER_FORMAT, "datasets": site.grid().datasets, "attempts": attempts}
    _put(root / MARKER_FILE, json.dumps(marker, indent=2).encode() + b"\n")
    return BundleReport(root, pages, attempts, copied, size)


def _put(path: Path, data: bytes) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return len(data)


def _replace(staging: Path, target: Path) -> None:
    """Move the finished bundle to `target`, replacing an earlier one."""
    if not target.exists():
        staging.rename(target)
        return
    old = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.old."))
    target.rename(old / "bundle")
    staging.rename(target)
    shutil.rmtree(old, ignore_errors=True)
