"""Node executors by kind. Each executor registers itself next to its code:

    @node_executor("run")
    def execute_run(node: Node, context: ExecutionContext) -> NodeResult: ...

and its kind's rule names the module (`executor: agevalx.runner.stage`), which is imported
the first time a node of the kind must be computed. A new node kind is one rule file plus one
module; nothing else lists executors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from importlib import import_module
from typing import TYPE_CHECKING

from agevalx.errors import AgevalError

if TYPE_CHECKING:
    from agevalx.graph.context import Executor
    from agevalx.graph.rules import Rule

_EXECUTORS: dict[str, Executor] = {}
_SUBSTITUTES: dict[str, Executor | None] = {}


def node_executor(kind: str) -> Callable[[Executor], Executor]:
    """Register the decorated function as the executor of `kind` nodes."""

    def register(function: Executor) -> Executor:
        _EXECUTORS[kind] = function
        return function

    return register


@contextmanager
def substituted(executors: Mapping[str, Executor | None]) -> Iterator[None]:
    """Within the block, compute these kinds with these executors (None: with none), as tests
    drive the scheduler with fakes."""
    previous = dict(_SUBSTITUTES)
    _SUBSTITUTES.update(executors)
    try:
        yield
    finally:
        _SUBSTITUTES.clear()
        _SUBSTITUTES.update(previous)


def executor_for(rule: Rule) -> Executor:
    """The executor of `rule`'s kind, importing the module its rule names on first use."""
    if rule.kind in _SUBSTITUTES:
        found = _SUBSTITUTES[rule.kind]
    else:
        if rule.kind not in _EXECUTORS and rule.executor is not None:
            import_module(rule.executor)
        found = _EXECUTORS.get(rule.kind)
    if found is None:
        raise AgevalError(
            "executor_unavailable",
            f"no executor is registered for {rule.kind} nodes",
            hint=f"rules/{rule.kind}.yaml must name the module that registers it (executor:)",
        )
    return found
