"""`--format html`: one self-contained page (inline CSS, no scripts, no external assets).

Every piece of text from results is escaped: task ids, labels and evaluator messages are
untrusted. A Content-Security-Policy forbids scripts and remote loads as a second fence.
"""

from __future__ import annotations

import html

from agevalx.reports.formats.cells import (
    Column,
    alerts,
    columns,
    heading,
    one_line,
    plural,
    status,
)
from agevalx.reports.models import AttemptRef, Report, ReportRow

CSP = "default-src 'none'; style-src 'unsafe-inline'"
BAR_COLUMNS = frozenset({"pass rate"})

STYLE = """
:root { --ink: #1f2328; --muted: #656d76; --line: #d0d7de; --head: #f6f8fa;
  --pass: #1a7f37; --fail: #9a6700; --error: #cf222e; --bar: #54aeff; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
  color: var(--ink); background: #fff; }
main { max-width: 1280px; margin: 0 auto; padding: 24px 32px 48px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 32px 0 8px; }
h2 span { font-size: 13px; font-weight: normal; color: var(--muted); margin-left: 8px; }
.meta { color: var(--muted); margin: 2px 0; }
code, .mono { font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid var(--line); padding: 6px 10px; text-align: left;
  vertical-align: top; }
thead th { background: var(--head); font-weight: 600; white-space: nowrap;
  border-top: 1px solid var(--line); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tbody tr:hover { background: #f6f8fa; }
td.PASS { color: var(--pass); } td.FAIL { color: var(--fail); } td.ERROR { color: var(--error); }
td.zero { color: #afb8c1; } td.infra { color: var(--error); font-weight: 600; }
p.alert { color: var(--error); font-weight: 600; }
.bar { display: inline-block; width: 56px; height: 8px; margin-left: 6px; background: #eaeef2;
  border-radius: 4px; overflow: hidden; vertical-align: middle; }
.bar span { display: block; height: 100%; background: var(--bar); }
a { color: #0969da; text-decoration: none; white-space: nowrap; }
details { border-bottom: 1px solid var(--line); padding: 6px 0; }
details summary { cursor: pointer; }
details[open] summary { font-weight: 600; }
table.keys { margin: 6px 0 6px 18px; width: auto; }
table.keys td.mono { white-space: nowrap; }
table.keys td, table.keys th { border: none; padding: 1px 8px 1px 0; font-size: 12px; }
table.keys th { color: var(--muted); font-weight: normal; }
.status-PASS { color: var(--pass); } .status-FAIL { color: var(--fail); }
.status-ERROR { color: var(--error); }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; color: var(--muted); }
dt { font-weight: 600; color: var(--ink); }
"""

LEGEND = (
    (
        "n",
        "attempts counted; ERROR attempts count as not passed, infrastructure ones only "
        "with --count-infra-as-fail",
    ),
    ("PASS / FAIL / ERROR", "evaluator verdicts; ERROR when a stage failed"),
    ("infra", "ERROR attempts of class infrastructure (not the agent's fault; docs/failures.md)"),
    ("pass rate", "PASS / n"),
    ("± s.e.", "spread over repeats: standard error of the pass rate"),
    ("pass@k", "unbiased estimate of the chance that at least one of k attempts passes"),
    ("pass^k", "chance that k attempts drawn without replacement all pass"),
    ("avg score", "mean evaluator score over attempts that have one"),
    ("limits hit", "attempts that ran out of a run-stage quota, per quota"),
    ("overall", "counts summed over tasks; rates and scores averaged over tasks"),
    ("node keys", "config digest (lock), run and evaluate node keys of each attempt"),
)


def esc(text: str) -> str:
    return html.escape(one_line(text), quote=True)


def _cell(column: Column, row: ReportRow) -> str:
    text = column.cell(row)
    if not column.numeric:
        return f"<td>{esc(text)}</td>"
    status = {
        "PASS": row.metrics.passed,
        "FAIL": row.metrics.failed,
        "ERROR": row.metrics.errors,
        "DONE": row.metrics.done,
        "infra": row.metrics.infrastructure,
    }
    classes = ["num"]
    if column.header in status:
        classes.append(column.header if status[column.header] else "zero")
    rate = row.metrics.pass_rate
    bar = ""
    if column.header in BAR_COLUMNS and rate is not None:
        bar = f'<span class="bar"><span style="width:{rate * 100:.1f}%"></span></span>'
    return f'<td class="{" ".join(classes)}">{esc(text)}{bar}</td>'


def _attempt(attempt: AttemptRef) -> str:
    score = "" if attempt.score is None else f"{attempt.score:g}"
    note = "; ".join(text for text in (attempt.limit, attempt.error) if text)
    cells = [
        f'<td class="mono">{esc(attempt.attempt_id)}</td>',
        f'<td class="status-{attempt.status}">{esc(status(attempt))}</td>',
        f'<td class="num">{esc(score)}</td>',
        f'<td class="mono">{esc(attempt.run_key or "-")}</td>',
        f'<td class="mono">{esc(attempt.evaluate_key or "-")}</td>',
        f"<td>{esc(note)}</td>",
    ]
    return "<tr>" + "".join(cells) + "</tr>"


def _trace(anchor: str, row: ReportRow) -> str:
    """The row's node keys: a closed details block in the key section, one line per attempt."""
    digests = ", ".join(f"<code>{esc(digest)}</code>" for digest in row.config_digests)
    names = " · ".join([row.task_id or "all tasks", row.agent, row.model])
    count = plural(len(row.attempts), "attempt")
    header = "".join(
        f"<th>{name}</th>" for name in ("attempt", "status", "score", "run", "evaluate", "note")
    )
    attempts = "".join(_attempt(attempt) for attempt in row.attempts)
    return (
        f'<details id="{anchor}"><summary>{esc(names)}: {count}</summary>'
        f'<div class="meta">config digest {digests}</div>'
        f'<table class="keys"><thead><tr>{header}</tr></thead><tbody>{attempts}</tbody></table>'
        "</details>"
    )


def _table(report: Report, scope: str, rows: list[ReportRow]) -> str:
    chosen = [column for column in columns(report, scope) if column.header != "config"]
    head = "".join(
        f'<th class="num">{esc(column.header)}</th>'
        if column.numeric
        else f"<th>{esc(column.header)}</th>"
        for column in chosen
    )
    body = "".join(
        f'<tr title="config digest {esc(", ".join(row.config_digests))}">'
        + "".join(_cell(column, row) for column in chosen)
        + f'<td><a href="#{scope}-{number}">{plural(len(row.attempts), "attempt")}</a></td></tr>'
        for number, row in enumerate(rows, start=1)
    )
    return f"<table><thead><tr>{head}<th>node keys</th></tr></thead><tbody>{body}</tbody></table>"


def _traces(report: Report) -> str:
    blocks = [
        _trace(f"{scope}-{number}", row)
        for scope, rows in (("overall", report.overall), ("task", report.tasks))
        for number, row in enumerate(rows, start=1)
    ]
    return "<h2>Node keys<span>every number above comes from these nodes</span></h2>\n" + (
        "\n".join(blocks)
    )


def _legend() -> str:
    items = "".join(f"<dt>{esc(term)}</dt><dd>{esc(text)}</dd>" for term, text in LEGEND)
    return f"<h2>Columns</h2><dl>{items}</dl>"


def render_html(report: Report) -> str:
    lines = heading(report)
    meta = "".join(f'<p class="meta">{esc(line)}</p>' for line in lines)
    meta += "".join(f'<p class="alert">{esc(line)}</p>' for line in alerts(report))
    title = esc("ageval report: " + ", ".join(report.datasets))
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n"
        f"<h1>ageval report</h1>\n{meta}\n"
        "<h2>Leaderboard<span>all tasks, best pass@k first</span></h2>\n"
        f"{_table(report, 'overall', report.overall)}\n"
        "<h2>Per task<span>one row per task, agent and model</span></h2>\n"
        f"{_table(report, 'task', report.tasks)}\n"
        f"{_traces(report)}\n{_legend()}\n</main>\n</body>\n</html>\n"
    )
