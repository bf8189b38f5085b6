"""Pages are built from escaped parts: untrusted text can never become markup."""

from __future__ import annotations

import pytest

from agevalx.view.render.markup import Html, el, join, text

pytestmark = pytest.mark.unit


def test_text_escapes_markup_and_quotes() -> None:
    assert text("<script>alert('x') & \"y\"</script>") == (
        "&lt;script&gt;alert(&#x27;x&#x27;) &amp; &quot;y&quot;&lt;/script&gt;"
    )


def test_element_content_and_attributes_are_escaped() -> None:
    page = el("a", "</a><script>", href='x" onclick="evil()', title="<b>")

    assert page == (
        '<a href="x&quot; onclick=&quot;evil()" title="&lt;b&gt;">&lt;/a&gt;&lt;script&gt;</a>'
    )


def test_markup_built_here_is_kept_and_strings_are_not() -> None:
    inner = el("b", "bold")

    assert el("p", inner, "<i>") == "<p><b>bold</b>&lt;i&gt;</p>"
    assert join([inner, "<i>"], " | ") == "<b>bold</b> | &lt;i&gt;"
    assert isinstance(join([inner]), Html)


def test_attribute_names_are_spelled_for_html_and_false_ones_left_out() -> None:
    page = el("input", class_="c", data_col="c1", checked=True, disabled=False, title=None)

    assert page == '<input class="c" data-col="c1" checked>'


def test_direction_overrides_are_shown_as_replacement_characters() -> None:
    assert text("evil\u202egnp.exe") == "evil\ufffdgnp.exe"


@pytest.mark.parametrize("name", ["script onload", "a>", "", "A"])
def test_names_that_are_not_plain_tag_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError):
        el(name)
    with pytest.raises(ValueError):
        el("a", **{name or "_": "x"})


def test_void_elements_take_no_content() -> None:
    with pytest.raises(ValueError):
        el("input", "text")
