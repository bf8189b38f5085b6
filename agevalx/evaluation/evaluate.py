"""The evaluate node's executor: score one run's final outputs with its task's verifier.

The task's format picks the verifier (`TaskRuntime.verifier`: evaluator.py, a test script, a
verifier class, a separate verifier environment); this executor only opens the scoring
session the verifier works in and stores what it returns, and the LLM judges' traffic
(`judge-model.jsonl`, output `judge_model`) when the verifier had any.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agevalx.cache.manifest import OutputRef
from agevalx.evaluation.result import EvaluationResult, store_result
from agevalx.evaluation.session import RunFacts, ScoringSession
from agevalx.formats.base import dataset_of
from agevalx.gateway.recording import JUDGE_TRAFFIC, TrafficLog
from agevalx.graph.context import ExecutionContext, NodeResult
from agevalx.graph.nodes import Node
from agevalx.graph.registry import node_executor
from agevalx.images.build import environment_image, reference_of
from agevalx.lockfile.node import task_lock
from agevalx.redaction import Redactor
from agevalx.results.paths import attempt_dir, attempt_id
from agevalx.runner.output import RunOutput
from agevalx.runner.snapshot import restore

TRIALS_DIR = ".ageval/trials"
"""Where verifiers that keep files on the host write them (`<task>/<uuid>/`)."""


def scoring_session(node: Node, context: ExecutionContext) -> ScoringSession:
    """The session scoring `node`'s run: its committed image, or the task image and the run's
    cached snapshots, or the isolated scoring host (its `scoring_host` parent) and the cached
    workspace; the run's collected paths; the task's scoring images (its `scoring_image`
    parent)."""
    assert node.task_id is not None
    task_id = node.task_id
    run_action = context.parent_result(node, "run")
    run = RunOutput.of(run_action)
    workspace, home = run_action.outputs["workspace"].digest, run_action.outputs["home"].digest
    artifacts = run_action.outputs["artifacts"].digest
    task_image = context.results.get(f"image:{node.task_id}")
    parents = {parent.kind: parent for parent in context.parent_results(node)}
    scoring, host = parents.get("scoring_image"), parents.get("scoring_host")
    collected = run_action.outputs.get("collected")
    return ScoringSession(
        lock=task_lock(context, node.task_id),
        task_dir=context.plan.dataset.task_dir(node.task_id),
        attempt_id=attempt_id(node),
        run=RunFacts(limit=run.limit, invocations=run.invocations, workdir=run.workdir),
        attempt_image=run.committed_image,
        task_image=reference_of(context.store, task_image) if task_image else None,
        restore=lambda container: restore(container, context.store, workspace, home, run.roots),
        scoring_images={"verifier": reference_of(context.store, scoring)} if scoring else {},
        trials_dir=context.plan.dataset.root / TRIALS_DIR,
        cache_dir=context.store.root,
        artifacts=lambda into: _restore_into(context, artifacts, into),
        host_image=reference_of(context.store, host) if host else None,
        restore_workspace=lambda container: restore(
            container, context.store, workspace, None, run.roots
        ),
        collected=_restorer(context, collected.digest) if collected else None,
        collect_failure=run.collect_failure,
        environment_image=lambda name: environment_image(context, task_id, name),
    )


def _restore_into(context: ExecutionContext, tree: str, into: Path) -> None:
    context.store.restore_tree(tree, into)


def _restorer(context: ExecutionContext, tree: str) -> Callable[[Path], None]:
    return lambda into: _restore_into(context, tree, into)


def masked(result: EvaluationResult, secrets: list[str]) -> EvaluationResult:
    """`result` with every secret value masked (an evaluator's output may print its env)."""
    return EvaluationResult.model_validate(Redactor(secrets).value(result.model_dump(mode="json")))


@node_executor("evaluate")
def execute_evaluate(node: Node, context: ExecutionContext) -> NodeResult:
    assert node.task_id is not None
    lock = task_lock(context, node.task_id)
    runtime = dataset_of(context.plan).runtime(lock)
    verifier = runtime.verifier()
    session = scoring_session(node, context)
    traffic = attempt_dir(context.plan.dataset.root, attempt_id(node)) / JUDGE_TRAFFIC
    traffic.unlink(missing_ok=True)  # this evaluation's own, not an earlier one's
    session.judge_traffic = TrafficLog(traffic, Redactor(runtime.secret_values()))
    try:
        result = masked(verifier.verify(session), runtime.secret_values())
    finally:
        session.close()
    judged = context.store.put_file(traffic) if traffic.is_file() else context.store.put_bytes(b"")
    outputs = {
        "result": OutputRef(digest=store_result(context.store, result), type="blob"),
        "judge_model": OutputRef(digest=judged, type="blob"),
    }
    meta = {"status": result.status, "score": result.score}
    return NodeResult(outputs=outputs, meta=meta)
