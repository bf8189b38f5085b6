"""The build graph: rules, keys, planning, execution, explanations and the executor registry.

Generic over node kinds and task formats: it imports nothing above `cache/`, `hashing` and
`errors`. What it plans over comes from `operations/` (a `PlanSource`).
"""

from agevalx.graph.context import ExecutionContext, NodeResult
from agevalx.graph.execute import ExecutionReport, execute
from agevalx.graph.explain import explain
from agevalx.graph.nodes import Node
from agevalx.graph.plan import GraphRequest, Plan, PlanSource, plan_graph
from agevalx.graph.registry import node_executor

__all__ = [
    "ExecutionContext",
    "ExecutionReport",
    "GraphRequest",
    "Node",
    "NodeResult",
    "Plan",
    "PlanSource",
    "execute",
    "explain",
    "node_executor",
    "plan_graph",
]
