"""`ageval graph show|explain`."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from agevalx.cli.options import (
    AgentOption,
    CacheDirOption,
    DatasetArgument,
    JsonOption,
    ModelOption,
    ProfilesOption,
    TaskOption,
    open_store,
)
from agevalx.cli.render import print_json, stdout
from agevalx.graph import Plan, PlanRequest, explain, plan
from agevalx.lockfile import BindingRequest

app = typer.Typer(help="Inspect the build graph: nodes, keys, and why a node is stale.")
AttemptsOption = Annotated[int, typer.Option("-k", min=1, help="Attempts per task.")]


def _plan(
    dataset: Any,
    task: list[str] | None,
    k: int,
    agent: Any,
    model: Any,
    profiles: Any,
    cache_dir: Any,
) -> Plan:
    request = PlanRequest(
        dataset=dataset,
        tasks=tuple(task or ()),
        k=k,
        binding=BindingRequest(agent=agent, model=model, profiles=profiles),
    )
    with open_store(cache_dir) as store:
        return plan(request, store)


@app.command(no_args_is_help=True)
def show(
    dataset: DatasetArgument,
    task: TaskOption = None,
    k: AttemptsOption = 1,
    agent: AgentOption = None,
    model: ModelOption = None,
    profiles: ProfilesOption = None,
    cache_dir: CacheDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the nodes of a dataset's graph with their keys and cache status (hit/miss)."""
    planned = _plan(dataset, task, k, agent, model, profiles, cache_dir)
    nodes = planned.nodes()
    if as_json:
        print_json(
            {
                "ok": True,
                "dataset": planned.dataset.config.dataset_id,
                "nodes": [node.summary() for node in nodes],
                "edges": [list(edge) for edge in planned.graph.edges],
            }
        )
        return
    table = Table(box=None, pad_edge=False)
    for column in ("node", "status", "key", "parents"):
        table.add_column(column)
    for node in nodes:
        status = "[green]hit[/]" if node.status == "hit" else "[yellow]miss[/]"
        parents = ", ".join(planned.graph.predecessors(node.id))
        table.add_row(node.id, status, node.key, parents)
    stdout.print(table)
    hits = sum(1 for node in nodes if node.status == "hit")
    stdout.print(f"{len(nodes)} nodes: {hits} cached, {len(nodes) - hits} to compute")


def _print_explanation(report: dict[str, Any], depth: int = 0) -> None:
    pad = "  " * depth
    stdout.print(f"{pad}{report['id']}  {report['status']}  {report['reason']}", markup=False)
    for change in report.get("changes", []):
        stdout.print(
            f"{pad}  {change['change']} {change['input']}: {change['before']} -> {change['after']}",
            markup=False,
        )
    for parent in report.get("parents", []):
        _print_explanation(parent, depth + 1)


@app.command(name="explain", no_args_is_help=True)
def explain_command(
    dataset: DatasetArgument,
    node: Annotated[str, typer.Option("--node", help="Node id, e.g. 'evaluate:task#0'.")],
    task: TaskOption = None,
    k: AttemptsOption = 1,
    agent: AgentOption = None,
    model: ModelOption = None,
    profiles: ProfilesOption = None,
    cache_dir: CacheDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Say why a node is stale: which of its inputs changed since it was last computed."""
    planned = _plan(dataset, task, k, agent, model, profiles, cache_dir)
    report = explain(planned, node)
    if as_json:
        print_json({"ok": True, **report})
    else:
        _print_explanation(report)
