"""`ageval graph show|explain`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from agevalx.cli.options import (
    AgentOption,
    AttemptStrategyOption,
    CacheDirOption,
    DatasetArgument,
    DatasetNameOption,
    EnvParamsOption,
    ExecutionParamsOption,
    JobConfigOption,
    JsonOption,
    ModelOption,
    PrimaryMetricOption,
    ProfilesOption,
    TaskOption,
    harbor_options,
    open_store,
)
from agevalx.cli.render import print_json, stdout
from agevalx.limits import MAX_K

if TYPE_CHECKING:
    from rich.tree import Tree

    from agevalx.formats.base import FormatOptions
    from agevalx.operations.lineage import BranchView, Lineage
    from agevalx.operations.planning import PlanRequest

app = typer.Typer(
    help="Inspect the build graph: nodes, keys, fork and replay branches, why a node is stale."
)
AttemptsOption = Annotated[
    int, typer.Option("-k", min=1, help=f"Attempts per task (at most {MAX_K}).")
]


def _request(
    dataset: Any,
    task: list[str] | None,
    k: int,
    agent: Any,
    model: Any,
    profiles: Any,
    harbor: FormatOptions | None = None,
    *,
    entries: bool = True,
) -> PlanRequest:
    from agevalx.lockfile import BindingRequest
    from agevalx.operations.planning import PlanRequest

    return PlanRequest(
        dataset=dataset,
        tasks=tuple(task or ()),
        k=k,
        binding=BindingRequest(agent=agent, model=model, profiles=profiles),
        harbor=harbor,
        entries=entries,
    )


def _short(key: str | None) -> str:
    return "-" if key is None else f"{key[:12]}…"


def _status(view: BranchView) -> str:
    return "[green]hit[/]" if view.status == "hit" else "[yellow]miss[/]"


def _branch_label(view: BranchView) -> str:
    from rich.markup import escape

    origin = (
        "run end"
        if view.checkpoint_seq is None
        else f"checkpoint {view.checkpoint_seq} ({_short(view.checkpoint_key)})"
    )
    if view.kind == "fork":
        models = ", ".join(sorted({model for model in view.models.values() if model})) or "-"
        branch = f"fork {view.node} {view.id} (key {_short(view.key)}, model {models})"
    else:
        evaluated = ", evaluate" if view.evaluate else ""
        branch = f"replay {view.id} (key {_short(view.key)}{evaluated})"
    return f"{escape(origin)} ─▶ {escape(branch)} {_status(view)}"


def _grow(tree: Tree, found: Lineage, attempt: str, seen: set[str]) -> None:
    for view in found.children.get(attempt, []):
        if view.id not in seen:
            seen.add(view.id)
            _grow(tree.add(_branch_label(view)), found, view.id, seen)


def _lineage_tree(views: list[BranchView]) -> Tree:
    """Each source run, with the branches grown from its checkpoints (and theirs) under it."""
    from rich.markup import escape
    from rich.tree import Tree

    from agevalx.operations.lineage import lineage

    found = lineage(views)
    tree = Tree("branches")
    for attempt in found.roots:
        first = found.source(attempt)
        run = first.parent_node or f"run:{first.task_id}"
        label = f"{run} {attempt} (key {_short(first.parent_run_key)})"
        _grow(tree.add(escape(label)), found, attempt, set())
    return tree


@app.command(no_args_is_help=True)
def show(
    dataset: DatasetArgument,
    task: TaskOption = None,
    k: AttemptsOption = 1,
    agent: AgentOption = None,
    model: ModelOption = None,
    profiles: ProfilesOption = None,
    job_config: JobConfigOption = None,
    env_params: EnvParamsOption = None,
    execution_params: ExecutionParamsOption = None,
    dataset_name: DatasetNameOption = None,
    primary_metric: PrimaryMetricOption = None,
    attempt_strategy: AttemptStrategyOption = None,
    cache_dir: CacheDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the nodes of a dataset's graph with their keys and cache status (hit/miss), then
    the fork and replay branches grown from the checkpoints of its tasks' attempts."""
    from agevalx.graph.plan import collector_paused

    harbor = harbor_options(
        job_config, env_params, primary_metric, attempt_strategy, execution_params, dataset_name
    )
    # the listing reads no node's entry: a remembered plan leaves them unparsed
    request = _request(dataset, task, k, agent, model, profiles, harbor, entries=False)
    with collector_paused():
        _show(request, cache_dir, as_json=as_json)


def _show(request: PlanRequest, cache_dir: Any, *, as_json: bool) -> None:
    """Plan `request` and print its nodes, edges and branches."""
    from agevalx.formats.base import dataset_of
    from agevalx.operations.lineage import branches
    from agevalx.operations.planning import plan

    with open_store(cache_dir) as store:
        planned = plan(request, store)
        nodes = planned.nodes()
        views = branches(planned.dataset.root, planned.task_ids, nodes, store)
    if as_json:
        print_json(
            {
                "ok": True,
                "dataset": dataset_of(planned).dataset_id,
                "nodes": [node.summary() for node in nodes],
                "edges": [list(edge) for edge in planned.edges()],
                "branches": [view.model_dump(mode="json") for view in views],
            }
        )
        return
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("node", "status", "key", "parents"):
        table.add_column(column)
    for node in nodes:
        status = "[green]hit[/]" if node.status == "hit" else "[yellow]miss[/]"
        parents = ", ".join(planned.parents(node.id))
        table.add_row(node.id, status, node.key, parents)
    stdout.print(table)
    hits = sum(1 for node in nodes if node.status == "hit")
    stdout.print(f"{len(nodes)} nodes: {hits} cached, {len(nodes) - hits} to compute")
    if views:
        stdout.print(_lineage_tree(views))


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
    job_config: JobConfigOption = None,
    env_params: EnvParamsOption = None,
    execution_params: ExecutionParamsOption = None,
    dataset_name: DatasetNameOption = None,
    primary_metric: PrimaryMetricOption = None,
    attempt_strategy: AttemptStrategyOption = None,
    cache_dir: CacheDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Say why a node is stale: which of its inputs changed since it was last computed."""
    from agevalx.graph.explain import explain
    from agevalx.operations.planning import plan

    harbor = harbor_options(
        job_config, env_params, primary_metric, attempt_strategy, execution_params, dataset_name
    )
    with open_store(cache_dir) as store:
        planned = plan(_request(dataset, task, k, agent, model, profiles, harbor), store)
    report = explain(planned, node)
    if as_json:
        print_json({"ok": True, **report})
    else:
        _print_explanation(report)
