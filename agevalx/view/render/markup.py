"""HTML built from escaped parts: agent output, task ids and messages are untrusted text.

Every string that is not already `Html` is escaped when it is put into an element or an
attribute, so a page can only contain markup this package wrote. Tag and attribute names
are this package's own constants, checked anyway.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

NAME = re.compile(r"[a-z][a-z0-9-]*")
VOID = frozenset({"br", "hr", "img", "input", "link", "meta", "col"})
BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")
"""Direction overrides can make shown text read differently from what it is: shown as U+FFFD."""


class Html(str):
    """Markup safe to put in a page as it is: made by `text`, `el` or `join` only."""

    __slots__ = ()


Child = Html | str | int | float | None
AttrValue = str | int | float | bool | None


def text(value: object) -> Html:
    """`value` as text: escaped, quotes included, direction overrides neutralised."""
    return Html(html.escape(BIDI_CONTROLS.sub("\ufffd", str(value)), quote=True))


def _child(child: Child) -> Html:
    if child is None:
        return Html("")
    return child if isinstance(child, Html) else text(child)


def join(children: Iterable[Child], separator: str = "") -> Html:
    """The children one after another (each escaped unless it is `Html`)."""
    return Html(text(separator).join(_child(child) for child in children))


def _attribute(name: str, value: AttrValue) -> str:
    attribute = name.rstrip("_").replace("_", "-")
    if not NAME.fullmatch(attribute):
        raise ValueError(f"not an attribute name: {attribute!r}")
    if value is True:
        return f" {attribute}"
    return f' {attribute}="{text(value)}"'


def el(tag: str, *children: Child, **attrs: AttrValue) -> Html:
    """`<tag attrs>children</tag>`; `class_="x"` is `class`, `data_col="c1"` is `data-col`.
    An attribute whose value is None or False is left out; True writes it bare."""
    if not NAME.fullmatch(tag):
        raise ValueError(f"not a tag name: {tag!r}")
    opening = "".join(
        _attribute(name, value) for name, value in attrs.items() if value not in (None, False)
    )
    if tag in VOID:
        if children:
            raise ValueError(f"<{tag}> has no content")
        return Html(f"<{tag}{opening}>")
    return Html(f"<{tag}{opening}>{join(children)}</{tag}>")
