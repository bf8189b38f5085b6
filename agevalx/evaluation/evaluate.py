"""The evaluate node's executor: score a run's final outputs with evaluator.py.

The scoring container is fresh: the committed image of the attempt container when this engine
still has it, otherwise the task image with the cached workspace and home restored. Evaluator
and task files enter it only now, after the run stage. /tmp is a tmpfs of evaluation.tmpfs_mb.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agevalx.cache.manifest import ActionManifest, OutputRef
from agevalx.environments.container import (
    ATTEMPT_LABEL,
    HOME,
    PRIVATE,
    WORKSPACE,
    AttemptContainer,
    ContainerSpec,
)
from agevalx.environments.engine import LABEL, EnvironmentFailure, image_exists
from agevalx.graph.execute import ExecutionContext, NodeResult
from agevalx.graph.nodes import Node
from agevalx.images.build import reference_of
from agevalx.results.paths import attempt_id
from agevalx.runner.snapshot import restore

RUNNER = Path(__file__).with_name("runner_script.py")
TASK_COPY = f"{PRIVATE}/task"


def _task_image(context: ExecutionContext, node: Node) -> str:
    action = context.results.get(f"image:{node.task_id}")
    if action is None:
        raise EnvironmentFailure("image_missing", f"no image result for {node.task_id}")
    return reference_of(context.store, action)


def scoring_container(
    context: ExecutionContext, node: Node, run: ActionManifest, lock: dict[str, Any]
) -> AttemptContainer:
    committed = run.meta.get("committed_image")
    from_snapshots = not (isinstance(committed, str) and image_exists(committed))
    image = _task_image(context, node) if from_snapshots else str(committed)
    host = lock["binding"]["evaluate_host"]["environment_options"]
    spec = ContainerSpec(
        image=image,
        name_hint=f"eval-{node.task_id}-{node.attempt}",
        network=host.get("network"),
        user=host.get("user") or lock["binding"]["environment_options"].get("user"),
        tmpfs_mb=lock["task"]["evaluation"]["tmpfs_mb"],
        platform=host.get("platform"),
        labels=((ATTEMPT_LABEL, attempt_id(node)), (LABEL, "scoring")),
    )
    container = AttemptContainer.start(spec)
    if from_snapshots:
        try:
            restore(
                container,
                context.store,
                run.outputs["workspace"].digest,
                run.outputs["home"].digest,
            )
        except BaseException:
            container.remove()
            raise
    return container


def _context_document(lock: dict[str, Any], run: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "evaluator": f"{TASK_COPY}/evaluator.py",
        "workspace": WORKSPACE,
        "home": HOME,
        "task_dir": TASK_COPY,
        "params": lock["task"]["parameters"],
        "limit": run.get("limit"),
        "run": {"invocations": run.get("invocations"), "limit": run.get("limit")},
    }


def evaluate_in(
    container: AttemptContainer, task_dir: Path, lock: dict[str, Any], run: Mapping[str, Any]
) -> dict[str, Any]:
    """Copy the evaluator in, run it within evaluate_seconds, return its result document.

    `run` is the run node's meta (limit, invocations)."""
    container.put_directory(task_dir, TASK_COPY)
    container.put_files(
        PRIVATE,
        {
            "evaluate.py": (RUNNER.read_bytes(), 0o644),
            "context.json": (json.dumps(_context_document(lock, run)).encode(), 0o644),
        },
    )
    seconds = lock["task"]["limits"]["evaluate_seconds"]
    result = container.exec(
        f"python3 {PRIVATE}/evaluate.py {PRIVATE}/context.json {PRIVATE}/result.json",
        timeout=seconds,
        user="root",
    )
    if result.timed_out:
        raise EnvironmentFailure(
            "evaluate_timeout", f"evaluator.py did not finish within {seconds} s (evaluate_seconds)"
        )
    raw = container.read_file(f"{PRIVATE}/result.json")
    if raw is None:
        return {
            "status": "ERROR",
            "error": {
                "type": "EvaluatorDidNotRun",
                "message": f"the evaluator runner exited with {result.exit_code}",
            },
            "evaluator_output": result.output[-4000:],
        }
    document: dict[str, Any] = json.loads(raw)
    document["evaluator_output"] = result.output[-4000:]
    return document


def execute_evaluate(node: Node, context: ExecutionContext) -> NodeResult:
    assert node.task_id is not None
    lock: dict[str, Any] = context.plan.node(f"lock:{node.task_id}").payload["lock"]
    if lock["features"].get("harbor"):
        from agevalx.harbor.nodes import execute_harbor_evaluate

        return execute_harbor_evaluate(node, context)
    run = context.parent_result(node, "run")
    task_dir = context.plan.dataset.task_dir(node.task_id)
    started = time.monotonic()
    container = scoring_container(context, node, run, lock)
    try:
        document = evaluate_in(container, task_dir, lock, run.meta)
    finally:
        container.remove()
    document["seconds"] = round(time.monotonic() - started, 3)
    digest = context.store.put_bytes(json.dumps(document, sort_keys=True).encode())
    meta = {"status": document.get("status"), "score": document.get("score")}
    return NodeResult(outputs={"result": OutputRef(digest=digest, type="blob")}, meta=meta)
