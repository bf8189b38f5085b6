"""The page shell and the small pieces every page uses: links, numbers, badges, sections.

Links are relative, so the same pages work from the server and from a bundle opened with
`file://`. Raw files (under `.ageval/` and the cache) are linked through `Links.raw`, which
remembers them: a bundle copies exactly the raw files its pages link to.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from agevalx.view.render.markup import Child, Html, el, join

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'"
)
"""No inline script or style and nothing from elsewhere: only this package's viewer.js/css."""
STATIC_FILES = ("viewer.css", "viewer.js")
RawArea = str
"""`ageval` (the dataset's `.ageval/`) or `cache` (the cache directory)."""


@dataclass
class Links:
    """Hrefs from a page `depth` directories below the site's root."""

    depth: int
    raw_files: set[tuple[RawArea, str]] = field(default_factory=set)

    def to(self, path: str) -> str:
        return "../" * self.depth + path

    def index(self) -> str:
        return self.to("index.html")

    def attempt(
        self, attempt_id: str, part: str | None = None, page: int = 1, anchor: str | None = None
    ) -> str:
        """The attempt page, or page `page` of one of its paged parts (page 1 is on the
        attempt page itself, at the part's section)."""
        name = quote(attempt_id, safe="")
        first = part is None or page == 1
        path = f"attempts/{name}.html" if first else f"attempts/{name}/{part}-{page}.html"
        fragment = anchor or (part if first else None)
        return self.to(path) + (f"#{fragment}" if fragment else "")

    def graph(self, job_id: str) -> str:
        return self.to(f"graph/{quote(job_id, safe='')}.html")

    def static(self, name: str) -> str:
        return self.to(f"static/{name}")

    def raw(self, area: RawArea, relative: str) -> str:
        self.raw_files.add((area, relative))
        return self.to(f"raw/{area}/{quote(relative)}")


def document(title: str, links: Links, *content: Child) -> bytes:
    """A whole page: the CSP, the viewer's stylesheet and script, a header and `content`."""
    head = el(
        "head",
        el("meta", charset="utf-8"),
        el("meta", http_equiv="Content-Security-Policy", content=CSP),
        el("meta", name="referrer", content="no-referrer"),
        el("meta", name="viewport", content="width=device-width, initial-scale=1"),
        el("title", title),
        el("link", rel="stylesheet", href=links.static("viewer.css")),
        el("script", src=links.static("viewer.js"), defer=True),
    )
    header = el(
        "header", el("a", "ageval view", href=links.index(), class_="home"), el("h1", title)
    )
    body = el("body", header, el("main", *content))
    return ("<!doctype html>\n" + el("html", head, body, lang="en") + "\n").encode("utf-8")


def section(section_id: str, title: str, *content: Child) -> Html:
    return el("section", el("h2", title), *content, id=section_id)


def facts(pairs: Iterable[tuple[str, Child]]) -> Html:
    """A two-column table of names and values (values that are None are left out)."""
    rows = [el("tr", el("th", name), el("td", value)) for name, value in pairs if value is not None]
    return el("table", *rows, class_="facts") if rows else Html("")


def table(headers: Iterable[str], rows: Iterable[Iterable[Child]], **attrs: Any) -> Html:
    head = el("thead", el("tr", *(el("th", name) for name in headers)))
    body = el("tbody", *(el("tr", *(el("td", cell) for cell in row)) for row in rows))
    return el("table", head, body, **attrs)


def pre(value: str, **attrs: Any) -> Html:
    return el("pre", value, **attrs)


def badge(
    status: str, href: str | None = None, title: str | None = None, label: str | None = None
) -> Html:
    """A PASS / FAIL / ERROR / DONE badge (showing `label`, else the status), a link to the
    attempt when `href` is given."""
    css = f"badge status-{status}"
    if href is None:
        return el("span", label or status, class_=css, title=title)
    return el("a", label or status, href=href, class_=f"{css} attempt", title=title)


def number(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def count(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def money(value: float | None) -> str:
    return "—" if value is None else f"${value:,.4f}"


def short(key: str | None) -> str:
    return "—" if key is None else f"{key[:12]}…"


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def clipped_tail(value: str, limit: int) -> tuple[str, int]:
    """The last `limit` characters of `value`, and how many were left out before them."""
    if len(value) <= limit:
        return value, 0
    return value[-limit:], len(value) - limit


def pager(pages: int, current: int, href: Any) -> Html:
    """`page 2 of 9` with links to the first, previous, next and last pages."""
    if pages <= 1:
        return Html("")
    targets = [("first", 1), ("previous", current - 1), ("next", current + 1), ("last", pages)]
    parts: list[Child] = [el("span", f"page {current} of {pages}")]
    for name, page in targets:
        if 1 <= page <= pages and page != current:
            parts.append(el("a", name, href=href(page), class_=f"page-{name}"))
    return el("nav", join(parts, " "), class_="pager")
