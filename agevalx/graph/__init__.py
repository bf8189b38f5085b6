"""The build graph: rules, keys, planning, execution, explanations and the executor registry.

Generic over node kinds and task formats: it imports nothing above `cache/`, `hashing` and
`errors`. What it plans over comes from `operations/` (a `PlanSource`).

Submodules are imported on first use of a name, so planning (`agevalx.graph.plan`) does not
load execution or explanations. `execute` and `explain` are imported from their modules of the
same names (`agevalx.graph.execute`, `agevalx.graph.explain`): a lazy package name would be
shadowed by the submodule once that is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agevalx.lazy import lazy_names

if TYPE_CHECKING:
    from agevalx.graph.context import ExecutionContext, NodeResult
    from agevalx.graph.execute import ExecutionReport
    from agevalx.graph.nodes import Node
    from agevalx.graph.plan import GraphRequest, Plan, PlanSource, plan_graph
    from agevalx.graph.registry import node_executor

_LAZY = {
    "ExecutionContext": "agevalx.graph.context",
    "ExecutionReport": "agevalx.graph.execute",
    "GraphRequest": "agevalx.graph.plan",
    "Node": "agevalx.graph.nodes",
    "NodeResult": "agevalx.graph.context",
    "Plan": "agevalx.graph.plan",
    "PlanSource": "agevalx.graph.plan",
    "node_executor": "agevalx.graph.registry",
    "plan_graph": "agevalx.graph.plan",
}

__all__ = [
    "ExecutionContext",
    "ExecutionReport",
    "GraphRequest",
    "Node",
    "NodeResult",
    "Plan",
    "PlanSource",
    "node_executor",
    "plan_graph",
]


__getattr__ = lazy_names(__name__, _LAZY)
