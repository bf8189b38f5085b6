"""The attempt page and its further pages (terminal actions, activity, transcript).

Long parts are paged: the attempt page shows the first page of each, and links to the rest
and to the raw file. Every output shown is clipped; the raw file has all of it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from agevalx.cache.layout import object_path
from agevalx.operations.replay import ReplayReport
from agevalx.results.models import TryRecord
from agevalx.runner.activity import ActivityRecord
from agevalx.view.attempt import (
    ACTIONS_PER_PAGE,
    ACTIVITY_PER_PAGE,
    AttemptView,
    Command,
    Step,
)
from agevalx.view.changes import FileChange
from agevalx.view.lineage import BranchInfo
from agevalx.view.render.layout import (
    Links,
    badge,
    clipped_tail,
    document,
    facts,
    number,
    pager,
    pre,
    pretty,
    section,
    short,
    table,
)
from agevalx.view.render.markup import Child, Html, el, join
from agevalx.view.transcript import TranscriptItem, TranscriptPage

OUTPUT_CHARS = 8_000
TEXT_CHARS = 50_000
DETAIL_CHARS = 600
Part = Callable[[AttemptView, Links, int], Html]


def attempt_page(
    view: AttemptView,
    transcript: TranscriptPage | None,
    jobs: list[str],
    known: set[str],
    links: Links,
) -> bytes:
    """The attempt page; `jobs` are the jobs indexing it, `known` the attempt ids with pages."""
    result = view.result
    return document(
        f"{result.task_id} #{result.attempt} · {result.attempt_id}",
        links,
        _contents(),
        _summary(view, jobs, links),
        section("prompt", "Prompt", _prompts(view)),
        section("evaluation", "Evaluation", _evaluation(view)),
        section("actions", "Terminal actions", _actions(view, links, 1)),
        section("transcript", "Transcript", _transcript(view, transcript, links)),
        section("activity", "Activity", _activity(view, links, 1)),
        section("changes", "File changes", _changes(view.steps, links)),
        section("nodes", "Node keys", _nodes(view)),
        section("lineage", "Lineage", _lineage(view, links, known)),
        section("files", "Raw files", _files(view, links)),
    )


SECTIONS = (
    ("prompt", "prompt"),
    ("evaluation", "evaluation"),
    ("actions", "terminal actions"),
    ("transcript", "transcript"),
    ("activity", "activity"),
    ("changes", "file changes"),
    ("nodes", "node keys"),
    ("lineage", "lineage"),
    ("files", "raw files"),
)


def _contents() -> Html:
    entries = (el("a", title, href=f"#{anchor}") for anchor, title in SECTIONS)
    return el("nav", join(entries, " · "), class_="contents")


def part_page(
    view: AttemptView, part: str, page: int, transcript: TranscriptPage | None, links: Links
) -> bytes:
    """Page `page` (from 2) of the attempt's `actions`, `activity` or `transcript`."""
    result = view.result
    back = el("a", f"← {result.attempt_id}", href=links.attempt(result.attempt_id), class_="back")
    if part == "transcript":
        body = _transcript(view, transcript, links)
    else:
        body = PARTS[part](view, links, page)
    titles = {"actions": "Terminal actions", "activity": "Activity", "transcript": "Transcript"}
    return document(
        f"{result.task_id} #{result.attempt} · {titles[part]}, page {page}",
        links,
        el("p", back),
        section(part, titles[part], body),
    )


def _summary(view: AttemptView, jobs: list[str], links: Links) -> Html:
    result = view.result
    error = result.error
    seconds = ", ".join(f"{stage} {value:.1f} s" for stage, value in result.seconds.items())
    job_links = join((el("a", job, href=links.graph(job)) for job in jobs), ", ") if jobs else None
    limits = ", ".join(f"{name}={value}" for name, value in sorted(view.configured_limits.items()))
    fork = result.forked_from or {}
    return section(
        "summary",
        "Attempt",
        facts(
            [
                ("status", badge(result.status)),
                ("score", number(result.score)),
                ("task", result.task_id),
                ("attempt", str(result.attempt)),
                ("agents", _pairs(result.agents)),
                ("models", _pairs({role: model or "—" for role, model in result.models.items()})),
                ("jobs", job_links),
                ("invocations", None if result.invocations is None else str(result.invocations)),
                ("seconds per stage", seconds or None),
                ("limit hit", result.limit),
                ("limits", limits or None),
                (
                    "error",
                    f"{error.code} ({error.stage} stage): {error.message}" if error else None,
                ),
                ("failure class", _failure_class(error.failure_class) if error else None),
                ("hint", error.hint if error else None),
                ("earlier tries", _tries(result.tries) if result.tries else None),
                ("forked from", ", ".join(f"{k}: {v}" for k, v in sorted(fork.items())) or None),
                ("config digest", result.config_digest),
                ("dataset", result.dataset_id),
            ]
        ),
    )


FAILURE_CLASS_NOTES = {
    "agent": "the attempt counts as not passed",
    "task": "the task or its configuration is broken; counted as not passed",
    "infrastructure": "not the agent's fault: retried, and left out of the scores",
}


def _failure_class(failure_class: str | None) -> str | None:
    """`infrastructure: not the agent's fault: ...` (docs/failures.md)."""
    if failure_class is None:
        return None
    note = FAILURE_CLASS_NOTES.get(failure_class)
    return f"{failure_class}: {note}" if note else failure_class


def _tries(tries: list[TryRecord]) -> Html:
    """The tries retried after an infrastructure failure, one line each."""
    lines = [
        f"try {item.number}: {item.code} ({item.failure_class}, {item.stage} stage): {item.message}"
        for item in tries
    ]
    return join((el("div", line) for line in lines), "")


def _pairs(mapping: dict[str, str]) -> str:
    if len(mapping) == 1:
        return next(iter(mapping.values()))
    return ", ".join(f"{role}={value}" for role, value in sorted(mapping.items())) or "—"


def _prompts(view: AttemptView) -> Html:
    if not view.prompts and view.lock is None:
        return el("p", "the attempt's lock is not available: its prompt cannot be shown")
    if not view.prompts:
        return el("p", "the task has no prompt files", class_="muted")
    parts: list[Child] = []
    for prompt in view.prompts:
        parts.append(el("h3", prompt.path))
        if prompt.note:
            parts.append(el("p", prompt.note, class_="note"))
        if prompt.text is not None:
            text, left = _head(prompt.text, TEXT_CHARS)
            parts.append(pre(text, class_="prompt"))
            parts.append(_left_out(left, "characters"))
    return join(parts)


def _head(value: str, limit: int) -> tuple[str, int]:
    return (value, 0) if len(value) <= limit else (value[:limit], len(value) - limit)


def _left_out(count: int, what: str) -> Html:
    if not count:
        return Html("")
    return el("p", f"… {count:,} more {what} not shown: see the raw file", class_="note")


def _evaluation(view: AttemptView) -> Html:
    result = view.result
    rewards = _rewards(result.details)
    output = result.evaluator_output
    shown, left = clipped_tail(output or "", TEXT_CHARS)
    return join(
        [
            facts(
                [
                    ("status", badge(result.status)),
                    ("score", number(result.score)),
                    ("evaluate seconds", number(result.seconds.get("evaluate"), 1)),
                ]
            ),
            el("h3", "Rewards") if rewards else None,
            facts((name, str(value)) for name, value in sorted(rewards.items())),
            el("h3", "Details"),
            pre(pretty(result.details), class_="details"),
            el("h3", "Evaluator output"),
            _left_out(left, "earlier characters"),
            pre(shown, class_="evaluator-output") if output else el("p", "none", class_="muted"),
        ]
    )


def _rewards(details: dict[str, Any]) -> dict[str, Any]:
    """A Harbor verifier's rewards (`extra.eval_raw_data.rewards`), else none."""
    extra = details.get("extra")
    raw = extra.get("eval_raw_data") if isinstance(extra, dict) else None
    rewards = raw.get("rewards") if isinstance(raw, dict) else None
    return rewards if isinstance(rewards, dict) else {}


def _slice(items: list[Any], page: int, per_page: int) -> list[Any]:
    return items[(page - 1) * per_page : page * per_page]


def _actions(view: AttemptView, links: Links, page: int) -> Html:
    if not view.commands:
        return el("p", "no terminal action was recorded", class_="muted")
    attempt = view.result.attempt_id
    nav = pager(view.action_pages, page, lambda n: links.attempt(attempt, "actions", n))
    shown = _slice(view.commands, page, ACTIONS_PER_PAGE)
    count = len(view.commands)
    summary = el("p", f"{count} terminal action{'' if count == 1 else 's'}", class_="muted")
    return join([summary, nav, *(_action(command) for command in shown), nav])


def _action(command: Command) -> Html:
    who = {"exec": "run.py", "agent_tool": "agent's own tool", "terminal": "agent terminal"}
    role = f"{command.role} #{command.invocation}" if command.role else None
    exit_code = "—" if command.exit_code is None else str(command.exit_code)
    output, left = clipped_tail(command.output or "", OUTPUT_CHARS)
    failed = command.exit_code not in (0, None)
    return el(
        "article",
        el(
            "header",
            join(
                [
                    el("span", f"#{command.seq}", class_="seq"),
                    el("span", who.get(command.type, command.type), class_="kind"),
                    el("span", role, class_="role") if role else None,
                    el("span", f"exit {exit_code}", class_="exit failed" if failed else "exit"),
                    el("span", command.cwd, class_="cwd"),
                ],
                " ",
            ),
        ),
        pre(command.command, class_="command"),
        _left_out(left, "earlier characters of output"),
        pre(output, class_="output") if output else el("p", "no output", class_="muted"),
        class_="action",
        id=f"action-{command.seq}",
    )


def _activity(view: AttemptView, links: Links, page: int) -> Html:
    if not view.activity:
        return el("p", "nothing else was recorded", class_="muted")
    attempt = view.result.attempt_id
    nav = pager(view.activity_pages, page, lambda n: links.attempt(attempt, "activity", n))
    rows = [_record_row(record) for record in _slice(view.activity, page, ACTIVITY_PER_PAGE)]
    headers = ["seq", "time", "type", "role", "path or output", "detail"]
    return join([nav, table(headers, rows, class_="activity"), nav])


def _record_row(record: ActivityRecord) -> list[Child]:
    what = record.path or record.command or record.output or ""
    detail = pretty(record.detail) if record.detail else ""
    role = f"{record.role} #{record.invocation}" if record.role else record.invocation
    return [
        str(record.seq),
        record.time,
        record.type,
        None if role is None else str(role),
        pre(_head(what, DETAIL_CHARS)[0]) if what else None,
        pre(_head(detail, DETAIL_CHARS)[0]) if detail else None,
    ]


def _transcript(view: AttemptView, page: TranscriptPage | None, links: Links) -> Html:
    attempt = view.result.attempt_id
    if "transcript.jsonl" not in view.files or page is None:
        return el("p", "no transcript was recorded", class_="muted")
    raw = el(
        "a", "raw transcript.jsonl", href=links.raw("ageval", _raw(attempt, "transcript.jsonl"))
    )
    size = el("p", f"{page.size:,} bytes · ", raw, class_="muted")
    nav = pager(page.pages, page.number, lambda n: links.attempt(attempt, "transcript", n))
    if not page.items:
        return join([size, el("p", "the transcript is empty", class_="muted")])
    return join([size, nav, *(_item(item) for item in page.items), nav])


def _item(item: TranscriptItem) -> Html:
    facts_shown = [
        el("span", f"{name}: {value}", class_="fact") for name, value in item.facts.items()
    ]
    return el(
        "article",
        el("header", el("span", item.kind, class_="kind"), " ", join(facts_shown, " ")),
        pre(item.body) if item.body else None,
        _left_out(item.clipped, "characters"),
        class_=f"item kind-{item.kind.replace(' ', '-')}",
    )


def _changes(steps: list[Step], links: Links) -> Html:
    if not steps:
        return el("p", "no checkpoint was recorded", class_="muted")
    parts: list[Child] = []
    for step in steps:
        parts.append(el("h3", step.label, " ", el("span", short(step.key), class_="key")))
        if step.first:
            note = "compared with an empty tree: the start of the run is not snapshotted"
            parts.append(el("p", note, class_="note"))
        if not step.areas:
            parts.append(el("p", "no cache to read the snapshots from", class_="muted"))
        for area in step.areas:
            if area.note:
                parts.append(el("p", f"/attempt/{area.area}: {area.note}", class_="note"))
            elif not area.changes:
                parts.append(el("p", f"/attempt/{area.area}: no change", class_="muted"))
            else:
                parts.append(el("h4", f"/attempt/{area.area}: {len(area.changes)} changed"))
                parts.extend(_file_change(change, links) for change in area.changes)
    return join(parts)


def _file_change(change: FileChange, links: Links) -> Html:
    lines = [el("span", line, class_=_diff_class(line)) for line in change.diff or []]
    blobs = [
        el("a", side, href=links.raw("cache", object_path(Path(), entry.digest).as_posix()))
        for side, entry in (("before", change.before), ("after", change.after))
        if entry is not None and entry.digest is not None
    ]
    return el(
        "details",
        el(
            "summary", el("span", change.change, class_=f"change-{change.change}"), " ", change.path
        ),
        el("p", change.note, class_="note") if change.note else None,
        el("p", "content: ", join(blobs, " · "), class_="blobs") if blobs else None,
        el("pre", join(lines, "\n"), class_="diff") if lines else None,
        class_="file-change",
        open=len(lines) > 0 and len(lines) < 60,
    )


def _diff_class(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "diff-file"
    if line.startswith("@@"):
        return "diff-hunk"
    return {"+": "diff-add", "-": "diff-del"}.get(line[:1], "diff-same")


def _nodes(view: AttemptView) -> Html:
    cached = {True: "hit", False: "miss", None: "—"}
    rows = [
        [node.id, node.kind, el("code", node.key), node.outcome, cached[node.cached]]
        for node in view.nodes
    ]
    headers = ["node", "kind", "key", "in this attempt", "in the cache now"]
    return table(headers, rows, class_="nodes")


def _lineage(view: AttemptView, links: Links, known: set[str]) -> Html:
    lineage = view.lineage
    parts: list[Child] = []
    origin = lineage.origin
    source = origin.source_attempt if origin else (view.result.forked_from or {}).get("source")
    if source:
        target: Child = el("a", source, href=links.attempt(source)) if source in known else source
        where = f" at checkpoint {origin.checkpoint_seq}" if origin else ""
        parts.append(el("p", "a fork of ", target, where))
    if not lineage.branches:
        parts.append(el("p", "no fork or replay grew from this attempt", class_="muted"))
        return join(parts)
    rows = [_branch_row(info, links, known) for info in lineage.branches]
    headers = ["branch", "id", "from", "key", "in the cache", "models / evaluate"]
    parts.append(table(headers, rows, class_="branches"))
    for info in lineage.branches:
        if info.replay is not None:
            parts.append(_replay(info.replay, view, links))
    return join(parts)


def _branch_row(info: BranchInfo, links: Links, known: set[str]) -> list[Child]:
    branch = info.branch
    if branch.kind == "fork" and branch.id in known:
        name: Child = el("a", branch.id, href=links.attempt(branch.id))
    elif branch.kind == "replay":
        name = el("a", branch.id, href=f"#replay-{branch.id}")
    else:
        name = branch.id
    origin = "run end" if branch.checkpoint_seq is None else f"checkpoint {branch.checkpoint_seq}"
    models = ", ".join(sorted({m for m in branch.models.values() if m})) or "—"
    extra = models if branch.kind == "fork" else f"evaluate: {bool(branch.evaluate)}"
    cached = {True: "hit", False: "miss", None: "—"}[info.cached]
    return [branch.kind, name, origin, el("code", short(branch.key)), cached, extra]


def _replay(report: ReplayReport, view: AttemptView, links: Links) -> Html:
    first = report.first_divergence
    attempt = view.result.attempt_id
    evaluation = report.evaluation or {}
    rows: list[tuple[str, Child]] = [
        ("status", el("span", report.status, class_=f"replay-{report.status}")),
        ("steps", str(report.steps)),
        ("divergences", str(report.divergences)),
    ]
    if first is not None:
        index = next((i for i, c in enumerate(view.commands) if c.seq == first.source_seq), 0)
        page = index // ACTIONS_PER_PAGE + 1
        href = links.attempt(attempt, "actions", page, anchor=f"action-{first.source_seq}")
        rows += [
            ("first divergence", el("a", f"step {first.step} (#{first.source_seq})", href=href)),
            ("command", pre(first.command)),
            (
                "exit code",
                f"recorded {first.expected_exit_code}, replayed {first.actual_exit_code}",
            ),
            (
                "output digest",
                f"recorded {short(first.expected_output_digest)}, "
                f"replayed {short(first.actual_output_digest)}",
            ),
        ]
    if evaluation:
        rows.append(("evaluation", f"{evaluation.get('status')} (score {evaluation.get('score')})"))
    raw = [
        el("a", name, href=links.raw("ageval", _raw(report.replay_id, name)))
        for name in ("replay.json", "activity.jsonl")
    ]
    rows.append(("files", join(raw, " · ")))
    return el(
        "div",
        el("h3", f"replay {report.replay_id}"),
        facts(rows),
        class_="replay",
        id=f"replay-{report.replay_id}",
    )


def _files(view: AttemptView, links: Links) -> Html:
    attempt = view.result.attempt_id
    items = [
        el("li", el("a", name, href=links.raw("ageval", _raw(attempt, name))))
        for name in view.files
    ]
    return el("ul", *items, class_="files")


def _raw(attempt_id: str, name: str) -> str:
    return f"runs/{attempt_id}/{name}"


PARTS: dict[str, Part] = {"actions": _actions, "activity": _activity}
