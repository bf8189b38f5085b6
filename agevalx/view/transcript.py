"""transcript.jsonl as a reader sees it: messages, thoughts, tool calls, usage, agent output.

Each line is an entry the ACP client or executor wrote (`{"type": "session_update",
"update": {...}}`, `agent_stdout`, `agent_setup`). Consecutive message (or thought) chunks
are joined into one item. Anything unknown is shown as its JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agevalx.view.pages import Line, Span, read_page

BODY_CHARS = 20_000
CHUNKS = {
    "agent_message_chunk": "message",
    "agent_thought_chunk": "thought",
    "user_message_chunk": "user",
}
TOOL_UPDATES = {"tool_call": "tool call", "tool_call_update": "tool update"}


@dataclass
class TranscriptItem:
    """One thing the agent said, thought or did."""

    kind: str
    """message, thought, user, tool call, tool update, plan, usage, agent stdout, agent setup,
    update (another session update), entry (an unknown entry) or unreadable."""
    body: str = ""
    facts: dict[str, str] = field(default_factory=dict)
    """Small facts shown beside the kind: a tool call's title, id, kind and status, ..."""
    clipped: int = 0
    """Characters of the body left out (see the raw file)."""


def transcript_items(lines: Iterable[Line]) -> list[TranscriptItem]:
    items: list[TranscriptItem] = []
    for line in lines:
        item = _item(line)
        previous = items[-1] if items else None
        if previous is not None and item.kind in CHUNKS.values() and previous.kind == item.kind:
            previous.body += item.body
        else:
            items.append(item)
    for item in items:
        _clip(item)
    return items


def _clip(item: TranscriptItem) -> None:
    if len(item.body) > BODY_CHARS:
        item.clipped = len(item.body) - BODY_CHARS
        item.body = item.body[:BODY_CHARS]


def _item(line: Line) -> TranscriptItem:
    entry = line.value
    if not isinstance(entry, dict):
        size = {"bytes": str(line.size)}
        return TranscriptItem("unreadable", line.excerpt or json.dumps(entry), size)
    kind = entry.get("type")
    if kind == "session_update" and isinstance(entry.get("update"), dict):
        return _update(entry["update"])
    if kind == "prompt":
        facts = {name: str(entry[name]) for name in ("role", "invocation") if name in entry}
        return TranscriptItem("prompt", str(entry.get("text", "")), facts)
    if kind == "agent_stdout":
        return TranscriptItem("agent stdout", str(entry.get("text", "")))
    if kind == "agent_setup":
        facts = {name: str(entry[name]) for name in ("bundle", "mode", "seconds") if name in entry}
        return TranscriptItem("agent setup", "", facts)
    return TranscriptItem("entry", _json(entry))


def _update(update: dict[str, Any]) -> TranscriptItem:
    name = str(update.get("sessionUpdate", ""))
    if name in CHUNKS:
        return TranscriptItem(CHUNKS[name], content_text(update.get("content")))
    if name in TOOL_UPDATES:
        facts = {
            label: str(update[key])
            for key, label in (
                ("title", "title"),
                ("kind", "kind"),
                ("status", "status"),
                ("toolCallId", "id"),
            )
            if update.get(key) is not None
        }
        parts = []
        if update.get("rawInput") is not None:
            parts.append(f"input: {_json(update['rawInput'])}")
        if update.get("content"):
            parts.append(content_text(update["content"]))
        if update.get("rawOutput") is not None:
            parts.append(f"output: {_json(update['rawOutput'])}")
        return TranscriptItem(TOOL_UPDATES[name], "\n".join(parts), facts)
    if name == "plan":
        entries = update.get("entries") or []
        lines = [
            f"[{entry.get('status', '?')}] {entry.get('content', '')}"
            for entry in entries
            if isinstance(entry, dict)
        ]
        return TranscriptItem("plan", "\n".join(lines))
    if name == "usage_update":
        facts = {key: _json(value) for key, value in update.items() if key != "sessionUpdate"}
        return TranscriptItem("usage", "", facts)
    rest = {key: value for key, value in update.items() if key != "sessionUpdate"}
    return TranscriptItem("update", _json(rest), {"update": name})


def content_text(content: Any) -> str:
    """The readable text of ACP content: text blocks as text, diffs as paths, else JSON."""
    if isinstance(content, list):
        return "\n".join(content_text(part) for part in content)
    if not isinstance(content, dict):
        return "" if content is None else str(content)
    kind = content.get("type")
    if kind == "text":
        return str(content.get("text", ""))
    if kind == "content":
        return content_text(content.get("content"))
    if kind == "diff":
        return f"diff of {content.get('path')}:\n{content.get('newText', '')}"
    if kind == "terminal":
        return f"terminal {content.get('terminalId')}"
    return _json(content)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


@dataclass(frozen=True)
class TranscriptPage:
    """One page of a transcript."""

    number: int
    """From 1."""
    pages: int
    items: list[TranscriptItem]
    size: int
    """Bytes of the whole file."""


def transcript_page(path: Path, spans: list[Span], number: int) -> TranscriptPage | None:
    """Page `number` of the transcript at `path` cut into `spans`; None past the last page."""
    if not 1 <= number <= len(spans):
        return None
    items = transcript_items(read_page(path, spans[number - 1]))
    return TranscriptPage(number, len(spans), items, spans[-1].end)
