"""The grid page (index.html): jobs, filters, the tasks x columns table, comparing two runs.

The table works without script; viewer.js adds the status filter, the task search, sorting
by a column and the comparison, reading the `data-*` attributes written here.
"""

from __future__ import annotations

from agevalx.formats import summary_figures
from agevalx.results.models import JobSummary, TaskMetrics
from agevalx.view.grid import STATUSES, AttemptCell, Cell, Column, Grid
from agevalx.view.render.layout import (
    Links,
    badge,
    count,
    document,
    money,
    number,
    section,
    short,
    table,
)
from agevalx.view.render.markup import Child, Html, el, join


def grid_page(grid: Grid, links: Links) -> bytes:
    title = ", ".join(grid.datasets) or "results"
    return document(
        title,
        links,
        _warnings([*grid.warnings, *(column.warning for column in grid.columns)]),
        _jobs(grid.jobs, links),
        _controls(grid.columns),
        _table(grid, links),
    )


def _warnings(warnings: list[str | None]) -> Html:
    shown = sorted({warning for warning in warnings if warning})
    if not shown:
        return Html("")
    return el("ul", *(el("li", warning) for warning in shown), class_="warnings")


def _jobs(jobs: list[JobSummary], links: Links) -> Html:
    if not jobs:
        return Html("")
    rows = [
        [
            el("a", job.job_id, href=links.graph(job.job_id), class_="graph-link"),
            str(job.k),
            str(len(job.tasks)),
            str(len(job.attempts)),
            number(job.overall.pass_at_k),
            _harbor(job),
            el("a", short(job.summary_key), href=links.raw("ageval", _summary(job))),
        ]
        for job in jobs
    ]
    headers = ["job (its graph)", "k", "tasks", "attempts", "pass@k", "harbor", "summary"]
    return section("jobs", "Jobs", table(headers, rows, class_="jobs"))


def _summary(job: JobSummary) -> str:
    return f"suite-runs/{job.job_id}/summary.json"


def _harbor(job: JobSummary) -> str:
    """The cell of what the job's format added (Harbor: its primary metric)."""
    return "; ".join(figures.cell for figures in summary_figures(job)) or "—"


def _controls(columns: list[Column]) -> Html:
    statuses = [
        el(
            "label",
            el("input", type="checkbox", name="status", value=status, checked=True),
            " ",
            badge(status),
        )
        for status in STATUSES
    ]
    options = [el("option", column.label, value=f"c{i}") for i, column in enumerate(columns)]
    compare: list[Child] = []
    if len(columns) > 1:
        compare = [
            el(
                "label",
                "compare ",
                el("select", el("option", "—", value=""), *options, id="compare-a"),
            ),
            el(
                "label",
                " with ",
                el("select", el("option", "—", value=""), *options, id="compare-b"),
            ),
            el("label", el("input", type="checkbox", id="only-flipped"), " only flipped tasks"),
        ]
    return el(
        "form",
        el("label", "task ", el("input", type="search", id="search", placeholder="search tasks")),
        el("fieldset", el("legend", "status"), *statuses),
        *compare,
        el("p", id="flips", aria_live="polite"),
        id="controls",
        class_="controls",
    )


def _table(grid: Grid, links: Links) -> Html:
    heads: list[Child] = [el("th", "task", data_sort="task", class_="sortable")]
    overall: list[Child] = [el("th", "overall")]
    for index, column in enumerate(grid.columns):
        key = f"c{index}"
        job = (
            el("a", column.job_id, href=links.graph(column.job_id))
            if column.job_id
            else el("span", "no job", class_="muted")
        )
        heads.append(
            el(
                "th",
                el("div", column.agent, class_="agent"),
                el("div", column.model, class_="model"),
                el("div", job, class_="job"),
                el("div", f"k={column.k}", class_="muted"),
                data_col=key,
                data_sort=key,
                class_="sortable",
                title="sort by pass rate",
            )
        )
        overall.append(el("td", _metrics(column.metrics, column.tokens, column.cost), data_col=key))
    rows = [_row(task, grid, links) for task in grid.tasks]
    return el(
        "table",
        el("thead", el("tr", *heads), el("tr", *overall, class_="overall")),
        el("tbody", *rows),
        id="grid",
        class_="grid",
    )


def _row(task: str, grid: Grid, links: Links) -> Html:
    cells: list[Child] = [el("th", task, class_="task")]
    for index, column in enumerate(grid.columns):
        cell = column.cells.get(task)
        key = f"c{index}"
        if cell is None:
            cells.append(el("td", "—", data_col=key, data_verdict="", class_="empty"))
        else:
            cells.append(_cell(cell, key, links))
    return el("tr", *cells, data_task=task, data_statuses=" ".join(sorted(grid.statuses(task))))


def _cell(cell: Cell, key: str, links: Links) -> Html:
    badges = [
        badge(
            attempt.status,
            links.attempt(attempt.attempt_id),
            title=_attempt_title(attempt),
            label=_status_label(attempt),
        )
        for attempt in cell.attempts
    ]
    metrics = cell.metrics
    line = [f"pass@k {number(metrics.pass_at_k)}", f"pass^k {number(metrics.pass_hat_k)}"]
    if metrics.avg_score is not None:
        line.append(f"score {number(metrics.avg_score)}")
    if cell.tokens is not None:
        line.append(f"{count(cell.tokens)} tok")
    if cell.cost is not None:
        line.append(money(cell.cost))
    return el(
        "td",
        el("div", join(badges, " "), class_="badges"),
        el("div", " · ".join(line), class_="cell-metrics"),
        data_col=key,
        data_verdict=cell.verdict,
        data_rate=number(metrics.pass_rate, 6) if metrics.pass_rate is not None else "",
        data_score=number(metrics.avg_score, 6) if metrics.avg_score is not None else "",
        class_=f"verdict-{cell.verdict}",
    )


SHORT_CLASSES = {"agent": "agent", "task": "task", "infrastructure": "infra"}


def _status_label(attempt: AttemptCell) -> str:
    """`ERROR·infra`: an ERROR with its failure class; other statuses as they are."""
    if attempt.failure_class is None:
        return attempt.status
    return f"{attempt.status}·{SHORT_CLASSES.get(attempt.failure_class, attempt.failure_class)}"


def _attempt_title(attempt: AttemptCell) -> str:
    parts = [f"attempt {attempt.attempt}"]
    if attempt.score is not None:
        parts.append(f"score {number(attempt.score)}")
    if attempt.limit:
        parts.append(f"limit hit: {attempt.limit}")
    if attempt.failure_class:
        parts.append(f"{attempt.failure_class} failure")
    if attempt.error:
        parts.append(attempt.error)
    return "; ".join(parts)


def _metrics(metrics: TaskMetrics, tokens: int | None, cost: float | None) -> Html:
    counts = [
        badge(status, label=f"{value} {status}")
        for status, value in (
            ("PASS", metrics.passed),
            ("FAIL", metrics.failed),
            ("ERROR", metrics.errors),
            ("DONE", metrics.done),
        )
        if value
    ]
    numbers = [
        ("n", str(metrics.n)),
        *(
            [("infrastructure", f"{metrics.infrastructure} not scored")]
            if metrics.infrastructure
            else []
        ),
        ("pass rate", number(metrics.pass_rate)),
        ("pass@k", number(metrics.pass_at_k)),
        ("pass^k", number(metrics.pass_hat_k)),
        ("avg score", number(metrics.avg_score)),
        ("tokens", count(tokens)),
        ("cost", money(cost)),
    ]
    return el(
        "div",
        el("div", join(counts, " "), class_="badges"),
        el("dl", *(join([el("dt", name), el("dd", value)]) for name, value in numbers)),
        class_="overall-metrics",
    )
