"""The viewer's pages, by path: what the server answers and what a bundle writes.

    index.html                               the grid
    attempts/<attempt_id>.html               an attempt
    attempts/<attempt_id>/<part>-<n>.html    page n (from 2) of its actions, activity, transcript
    graph/<job_id>.html                      a job's graph
    static/viewer.css, static/viewer.js      the front end
    raw/ageval/<path>                        a file under the dataset's .ageval/
    raw/cache/<path>                         a blob or tree manifest of the cache

Pages are made from the names the results give (attempt ids, job ids), never from a path
in a request; raw files are looked up under their root only, and one that resolves outside
it (a `..`, a symlink leaving the root) does not exist for the viewer.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from urllib.parse import unquote

from agevalx.cache.layout import OBJECTS, TREES
from agevalx.cache.store import CacheStore
from agevalx.reports.sources import RESULT_FILE, SUMMARY_FILE
from agevalx.results.models import AttemptResult
from agevalx.view.attempt import AttemptView, load_attempt
from agevalx.view.grid import Grid, build_grid
from agevalx.view.jobgraph import job_graph
from agevalx.view.pages import Span, page_spans
from agevalx.view.render.attempt_page import attempt_page, part_page
from agevalx.view.render.graph_page import graph_page
from agevalx.view.render.grid_page import grid_page
from agevalx.view.render.layout import STATIC_FILES, Links, RawArea
from agevalx.view.source import ViewSource
from agevalx.view.transcript import TranscriptPage, transcript_page

HTML = "text/html; charset=utf-8"
RAW = "text/plain; charset=utf-8"
STATIC_TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8"}
PARTS = ("actions", "activity", "transcript")
CACHE_AREAS = (OBJECTS, TREES)
"""The content-addressed parts of the cache: the only ones served raw."""
_ATTEMPT = re.compile(r"attempts/([^/]+)\.html")
_PART = re.compile(r"attempts/([^/]+)/(actions|activity|transcript)-([1-9][0-9]{0,6})\.html")
_GRAPH = re.compile(r"graph/([^/]+)\.html")


@dataclass(frozen=True)
class Page:
    """A page to send: its bytes, or the raw file to stream, and its content type."""

    content_type: str
    body: bytes = b""
    file: Path | None = None
    raw_files: frozenset[tuple[RawArea, str]] = frozenset()
    """The raw files the page links to (what a bundle copies beside it)."""


class Site:
    """The pages of one source. Thread-safe: the server renders pages concurrently."""

    def __init__(self, source: ViewSource) -> None:
        self.source = source
        self.store = CacheStore(source.cache_dir) if source.cache_dir.is_dir() else None
        """None when there is no cache: the pages then say so instead of creating one."""
        self._lock = threading.Lock()
        self._grid: tuple[tuple[tuple[str, int, int], ...], Grid] | None = None
        self._spans: dict[tuple[Path, int, int], list[Span]] = {}

    def close(self) -> None:
        if self.store is not None:
            self.store.close()

    # The pages

    def grid(self) -> Grid:
        """The grid, rebuilt when a result or summary file changed (a live view of a job)."""
        stamp = self._results_stamp()
        with self._lock:
            if self._grid is not None and self._grid[0] == stamp:
                return self._grid[1]
        grid = build_grid(self.source)
        with self._lock:
            self._grid = (stamp, grid)
        return grid

    def index(self) -> Page:
        return _render(0, lambda links: grid_page(self.grid(), links))

    def attempt(self, attempt_id: str) -> tuple[AttemptView, Page] | None:
        grid = self.grid()
        result = grid.results.get(attempt_id)
        if result is None:
            return None
        view = load_attempt(self.source.root, result, self.store)
        jobs = [
            job.job_id
            for job in grid.jobs
            if any(entry.get("attempt_id") == attempt_id for entry in job.attempts)
        ]
        first = self.transcript(result, 1)
        known = set(grid.results)
        return view, _render(1, lambda links: attempt_page(view, first, jobs, known, links))

    def part(self, view: AttemptView, part: str, page: int) -> Page | None:
        """Page `page` (from 2) of a part of the attempt; None past its last page."""
        transcript = self.transcript(view.result, page) if part == "transcript" else None
        pages = {
            "actions": view.action_pages,
            "activity": view.activity_pages,
            "transcript": transcript.pages if transcript else 0,
        }[part]
        if not 2 <= page <= pages:
            return None
        return _render(2, lambda links: part_page(view, part, page, transcript, links))

    def transcript(self, result: AttemptResult, page: int) -> TranscriptPage | None:
        path = self.source.runs_dir / result.attempt_id / "transcript.jsonl"
        try:
            stat = path.stat()
        except OSError:
            return None
        stamp = (path, stat.st_size, stat.st_mtime_ns)
        with self._lock:
            spans = self._spans.get(stamp)
        if spans is None:
            spans = page_spans(path)
            with self._lock:
                self._spans[stamp] = spans
        return transcript_page(path, spans, page)

    def graph(self, job_id: str) -> Page | None:
        grid = self.grid()
        summary = next((job for job in grid.jobs if job.job_id == job_id), None)
        if summary is None:
            return None
        ids = [str(entry.get("attempt_id")) for entry in summary.attempts]
        results = [grid.results[i] for i in ids if i in grid.results]
        graph = job_graph(self.source.root, summary, results, self.store)
        return _render(1, lambda links: graph_page(graph, links))

    def raw(self, area: str, relative: str) -> Page | None:
        """A raw file under `.ageval/` or the cache's objects/ and trees/, or None."""
        if area == "ageval":
            found = contained_file(self.source.state_dir, relative)
        elif area == "cache" and relative.split("/", 1)[0] in CACHE_AREAS:
            found = contained_file(self.source.cache_dir, relative)
        else:
            found = None
        return None if found is None else Page(RAW, file=found)

    # The server's routing

    def route(self, path: str) -> Page | None:
        """The page at a request's (still quoted) path, or None (not found)."""
        path = path.lstrip("/")
        if path in ("", "index.html"):
            return self.index()
        if path.startswith("static/"):
            return static(path.removeprefix("static/"))
        if path.startswith("raw/"):
            area, _, relative = path.removeprefix("raw/").partition("/")
            return self.raw(area, unquote(relative))
        if match := _ATTEMPT.fullmatch(path):
            found = self.attempt(unquote(match[1]))
            return found[1] if found else None
        if match := _PART.fullmatch(path):
            found = self.attempt(unquote(match[1]))
            return self.part(found[0], match[2], int(match[3])) if found else None
        if match := _GRAPH.fullmatch(path):
            return self.graph(unquote(match[1]))
        return None

    def _results_stamp(self) -> tuple[tuple[str, int, int], ...]:
        files = [
            *self.source.runs_dir.glob(f"*/{RESULT_FILE}"),
            *self.source.job_dir("").glob(f"*/{SUMMARY_FILE}"),
        ]
        stamps = []
        for file in files:
            try:
                stat = file.stat()
            except OSError:
                continue
            stamps.append((file.as_posix(), stat.st_size, stat.st_mtime_ns))
        return tuple(sorted(stamps))


def _render(depth: int, render: Callable[[Links], bytes]) -> Page:
    """A page `depth` directories down, with the raw files it linked to."""
    links = Links(depth=depth)
    body = render(links)
    return Page(HTML, body=body, raw_files=frozenset(links.raw_files))


def static(name: str) -> Page | None:
    """viewer.css or viewer.js, shipped in this package."""
    if name not in STATIC_FILES:
        return None
    data = resources.files("agevalx.view").joinpath("static", name).read_bytes()
    return Page(STATIC_TYPES[Path(name).suffix], body=data)


def contained_file(root: Path, relative: str) -> Path | None:
    """The regular file `relative` names under `root`, if it really lies there: no absolute
    path, no `.`/`..`/empty part, and after following every symlink still under `root`."""
    parts = relative.split("/")
    if "\x00" in relative or "\\" in relative or any(p in ("", ".", "..") for p in parts):
        return None
    try:
        base = root.resolve(strict=True)
        target = base.joinpath(*parts).resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not target.is_relative_to(base) or not target.is_file():
        return None
    return target
