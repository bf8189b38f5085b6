"""The graph page of a job: every node, hit or miss, and why each miss is stale."""

from __future__ import annotations

from typing import Any

from agevalx.view.jobgraph import GraphNode, JobGraph
from agevalx.view.render.layout import Links, document, pretty, section, short
from agevalx.view.render.markup import Child, Html, el, join


def graph_page(graph: JobGraph, links: Links) -> bytes:
    hits = sum(1 for node in graph.nodes if node.status == "hit")
    misses = sum(1 for node in graph.nodes if node.status == "miss")
    intro: list[Child] = [
        el("p", "planned as ", el("code", f"ageval graph show <dataset> {graph.request}")),
        el("p", f"{len(graph.nodes)} nodes: {hits} cached, {misses} to compute", class_="muted"),
    ]
    if graph.problem:
        intro.append(el("p", f"the job's graph cannot be planned: {graph.problem}", class_="note"))
    headers = ["node", "status", "key", "the job's key", "in the job", "parents", "why stale"]
    rows = [_row(node) for node in graph.nodes]
    return document(
        f"graph of {graph.job_id}",
        links,
        section(
            "graph",
            "Nodes",
            join(intro),
            el(
                "table",
                el("thead", el("tr", *(el("th", name) for name in headers))),
                el("tbody", *rows),
                class_="graph",
            ),
        ),
    )


def _row(node: GraphNode) -> Html:
    same = node.job_key is None or node.job_key == node.key
    job_key = "same" if node.job_key == node.key else short(node.job_key)
    return el(
        "tr",
        el("td", node.id, class_="node"),
        el("td", node.status, class_=f"node-{node.status}"),
        el("td", el("code", short(node.key)), title=node.key),
        el("td", job_key, class_=None if same else "note", title=node.job_key),
        el("td", node.job_outcome or "—"),
        el("td", ", ".join(node.parents) or "—"),
        el("td", _explanation(node.explanation) if node.explanation else "—"),
        data_status=node.status,
        data_node=node.id,
    )


def _explanation(report: dict[str, Any]) -> Html:
    """`graph explain`'s reason, the inputs that changed, and the same for changed parents."""
    changes = [
        el(
            "li",
            el("code", f"{change.get('change')} {change.get('input')}"),
            f": {_value(change.get('before'))} → {_value(change.get('after'))}",
        )
        for change in report.get("changes", [])
    ]
    parents = [
        el("li", f"{parent.get('id')}: ", _explanation(parent))
        for parent in report.get("parents", [])
    ]
    return join(
        [
            el("span", str(report.get("reason", "")), class_="reason"),
            el("ul", *changes, class_="changes") if changes else None,
            el("ul", *parents, class_="parents") if parents else None,
        ]
    )


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else pretty(value)
    return text if len(text) <= 120 else text[:120] + "…"
