"""Placeholder executors: store outputs of the shape a rule declares, without doing the work.

Tests of the scheduler and benchmarks of planning fill a cache this way, since only the
action entries (and that their outputs exist) matter to them.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from agevalx.cache.manifest import OutputRef
from agevalx.cache.store import CacheStore
from agevalx.graph.execute import ExecutionContext, NodeResult
from agevalx.graph.nodes import Node
from agevalx.graph.rules import load_rules


def declared_outputs(node: Node, store: CacheStore) -> dict[str, OutputRef]:
    """For each output the node's rule declares: a blob naming the node, or an empty tree."""
    outputs = {}
    for output in load_rules()[node.kind].outputs:
        if output.type == "blob":
            digest = store.put_bytes(f"{node.key}/{output.name}".encode())
        else:
            with tempfile.TemporaryDirectory(prefix="ageval-placeholder-") as empty:
                digest = store.put_tree(Path(empty)).digest
        outputs[output.name] = OutputRef(digest=digest, type=output.type)
    return outputs


def placeholder(node: Node, context: ExecutionContext) -> NodeResult:
    """An executor that stores the declared outputs and nothing else."""
    return NodeResult(outputs=declared_outputs(node, context.store))
