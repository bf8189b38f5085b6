"""`--json` output: valid, sorted, one line per top-level field and per listed item."""

from __future__ import annotations

import json

import pytest

from agevalx.cli.render import json_text

pytestmark = pytest.mark.unit


def test_json_text_parses_back_to_the_document() -> None:
    document = {
        "ok": True,
        "nodes": [{"id": "run:t#0", "parents": {"image": ["ab"]}}, {"id": "ü", "n": None}],
        "edges": [],
        "report": {"b": 1, "a": [1, 2]},
        "ratio": 0.5,
    }
    assert json.loads(json_text(document)) == document


def test_json_text_puts_each_listed_item_on_its_own_line_with_sorted_keys() -> None:
    text = json_text({"ok": True, "nodes": [{"z": 1, "a": 2}, {"id": "x"}], "dataset": "d"})
    assert text.splitlines() == [
        "{",
        '  "dataset": "d",',
        '  "nodes": [',
        '    {"a": 2, "z": 1},',
        '    {"id": "x"}',
        "  ],",
        '  "ok": true',
        "}",
    ]


def test_json_text_keeps_text_unescaped_and_empty_documents_valid() -> None:
    assert json_text({"name": "tâche"}) == '{\n  "name": "tâche"\n}\n'
    assert json.loads(json_text({})) == {}


@pytest.mark.parametrize(
    "value",
    [
        'é\u2028"x\n',
        1.5,
        1e300,
        float("nan"),
        10**30,
        None,
        True,
        [],
        {},
        {"b": [1, {"a": "ü", "c": [None, 2.0]}], "a": -0.0},
    ],
)
def test_each_item_is_encoded_as_the_standard_encoder_does(value: object) -> None:
    expected = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode(value)
    assert json_text({"items": [value, value]}).split("\n")[2] == f"    {expected},"
