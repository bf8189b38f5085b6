"""transcript.jsonl entries become messages, thoughts, tool calls and the rest."""

from __future__ import annotations

import pytest

from agevalx.view.pages import Line
from agevalx.view.transcript import BODY_CHARS, transcript_items
from tests.unit.view.builders import message

pytestmark = pytest.mark.unit


def lines(*values: object) -> list[Line]:
    return [Line(value, None, 1) for value in values]


def test_consecutive_chunks_of_a_message_are_one_item() -> None:
    items = transcript_items(
        lines(
            message("Hello, "),
            message("world."),
            message("thinking", "agent_thought_chunk"),
            message("again."),
        )
    )

    assert [(item.kind, item.body) for item in items] == [
        ("message", "Hello, world."),
        ("thought", "thinking"),
        ("message", "again."),
    ]


def test_a_tool_call_shows_its_title_status_input_and_output() -> None:
    call = {
        "sessionUpdate": "tool_call",
        "toolCallId": "call-1",
        "title": "bash",
        "kind": "execute",
        "status": "pending",
        "rawInput": {"command": "ls"},
    }
    update = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "call-1",
        "status": "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": "a.txt"}}],
    }

    first, second = transcript_items(
        lines(
            {"type": "session_update", "update": call}, {"type": "session_update", "update": update}
        )
    )

    assert (first.kind, first.facts["title"], first.facts["id"]) == ("tool call", "bash", "call-1")
    assert '"command": "ls"' in first.body
    assert (second.kind, second.facts["status"], second.body) == (
        "tool update",
        "completed",
        "a.txt",
    )


def test_usage_plan_stdout_and_unknown_entries_are_kept() -> None:
    usage = {"sessionUpdate": "usage_update", "used": 10, "size": 100}
    plan = {"sessionUpdate": "plan", "entries": [{"content": "step", "status": "pending"}]}
    items = transcript_items(
        lines(
            {"type": "session_update", "update": usage},
            {"type": "session_update", "update": plan},
            {"type": "agent_stdout", "text": "noise"},
            {"type": "something_new", "x": 1},
        )
    )

    assert [item.kind for item in items] == ["usage", "plan", "agent stdout", "entry"]
    assert items[0].facts == {"used": "10", "size": "100"}
    assert items[1].body == "[pending] step"
    assert '"x": 1' in items[3].body


def test_an_unreadable_line_is_shown_by_its_excerpt() -> None:
    (item,) = transcript_items([Line(None, "not json", 8)])

    assert (item.kind, item.body) == ("unreadable", "not json")


def test_a_long_message_is_clipped_and_says_how_much() -> None:
    (item,) = transcript_items(lines(message("m" * (BODY_CHARS + 5))))

    assert len(item.body) == BODY_CHARS and item.clipped == 5
