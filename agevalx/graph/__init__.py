"""The build graph: rules, keys, planning, execution and explanations."""

from agevalx.graph.execute import ExecutionReport, NodeResult, execute
from agevalx.graph.explain import explain
from agevalx.graph.nodes import Node
from agevalx.graph.plan import Plan, PlanRequest, plan

__all__ = [
    "ExecutionReport",
    "Node",
    "NodeResult",
    "Plan",
    "PlanRequest",
    "execute",
    "explain",
    "plan",
]
