"""Placeholder executors: store outputs of the shape a rule declares, without doing the work.

Tests of the scheduler and benchmarks of planning fill a cache this way, since only the
action entries (and that their outputs exist) matter to them. The runnable ones store what
`ageval run` reads back from a finished attempt, so a benchmark can time a run of a job whose
every node is cached.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from agevalx.cache.manifest import OutputRef
from agevalx.cache.store import CacheStore
from agevalx.evaluation.result import EvaluationResult
from agevalx.graph.context import ExecutionContext, Executor, NodeResult
from agevalx.graph.nodes import Node
from agevalx.graph.rules import load_rules
from agevalx.results.paths import attempt_id

RUNNABLE_IMAGE = "ageval/base:bookworm"
"""The image a runnable image node names: the base image ageval makes offline."""


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


def _image(node: Node, context: ExecutionContext) -> NodeResult:
    meta = {"image_id": RUNNABLE_IMAGE, "reference": RUNNABLE_IMAGE}
    return NodeResult(outputs=declared_outputs(node, context.store), meta=meta)


def _run(node: Node, context: ExecutionContext) -> NodeResult:
    meta = {
        "attempt_id": attempt_id(node),
        "committed_image": RUNNABLE_IMAGE,
        "committed_image_id": RUNNABLE_IMAGE,
    }
    return NodeResult(outputs=declared_outputs(node, context.store), meta=meta)


def _evaluate(node: Node, context: ExecutionContext) -> NodeResult:
    outputs = declared_outputs(node, context.store)
    result = EvaluationResult(status="PASS", score=1.0).model_dump_json().encode()
    outputs["result"] = OutputRef(digest=context.store.put_bytes(result), type="blob")
    return NodeResult(outputs=outputs)


RUNNABLE: dict[str, Executor] = {"image": _image, "run": _run, "evaluate": _evaluate}
"""Placeholders whose outputs a run reads back as a finished, passing attempt (the lock and
summary executors are real: they need no Docker)."""
