"""Run and evaluate nodes of Harbor tasks: Harbor's trial, split at the content boundary.

The run node starts the task image, prepares it as Harbor's docker environment does, runs the
healthcheck, then the agent (instruction.md; the oracle runs solution/solve.sh), and commits the
container: verifiers check files anywhere in it. The evaluate node runs Harbor's verifier in a
container of that committed image, so editing tests/ re-runs only the verifier, in shared mode
too. A task verified in a `separate` environment gets a fresh verifier container instead, into
which only the attempt's artifacts are restored (separate.py).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from agevalx.agents.base import Container, Invocation, WallTimeExceeded
from agevalx.cache.manifest import OutputRef
from agevalx.environments.container import ATTEMPT_LABEL, AttemptContainer
from agevalx.environments.engine import LABEL, EnvironmentFailure, image_exists
from agevalx.errors import AgevalError
from agevalx.graph.execute import ExecutionContext, NodeResult
from agevalx.graph.nodes import Node
from agevalx.harbor.dataset import task_spec
from agevalx.harbor.images import image_workdir
from agevalx.harbor.outcomes import VERIFIER_SANDBOX_FAILED, VerifierOutcome, VerifierStatus
from agevalx.harbor.sandbox import container_spec, prepare_environment
from agevalx.harbor.scoring import score_outcome
from agevalx.harbor.separate import verify_separately
from agevalx.harbor.spec import HarborTaskSpec
from agevalx.harbor.verifier import healthcheck, run_oracle, run_verifier
from agevalx.images.build import image_reference
from agevalx.results.paths import attempt_dir, attempt_id
from agevalx.runner.activity import ActivityJournal

RUN_REPOSITORY = "ageval/run"
SANDBOX_RETRIES = 2
"""Further tries of a verification whose sandbox failed (Harbor's FATAL)."""
TRIALS_DIR = ".ageval/harbor-trials"
"""Where verifier classes get their Harbor `TrialPaths` (`<task>/<uuid>/`)."""


def _lock(context: ExecutionContext, node: Node) -> dict[str, Any]:
    lock: dict[str, Any] = context.plan.node(f"lock:{node.task_id}").payload["lock"]
    return lock


def _start(spec: Any, image: str, node: Node, kind: str) -> tuple[AttemptContainer, str]:
    workdir = spec.workdir or image_workdir(image) or "/"
    base = container_spec(spec, image, f"{kind}-{node.task_id}-{node.attempt}")
    labels = ((ATTEMPT_LABEL, attempt_id(node)), (LABEL, kind))
    return AttemptContainer.start(replace(base, labels=base.labels + labels)), workdir


def _run_agent(
    node: Node,
    context: ExecutionContext,
    spec: Any,
    container: AttemptContainer,
    workdir: str,
    journal: ActivityJournal,
) -> dict[str, Any]:
    role = next(iter(_lock(context, node)["binding"]["roles"].values()))
    if role["executor"] == "oracle":
        outcome = run_oracle(container, spec, workdir=workdir)
        journal.append(
            "terminal",
            role="solver",
            invocation=0,
            command="/solution/solve.sh",
            cwd=workdir,
            exit_code=outcome.exit_code,
            output=outcome.output,
            detail={"executor": "oracle", "timed_out": outcome.timed_out},
        )
        journal.append(
            "invocation",
            role="solver",
            invocation=0,
            exit_code=outcome.exit_code,
            detail={"stop_reason": "exit"},
        )
        return {"limit": "wall_time_seconds" if outcome.timed_out else None}
    from agevalx.runner.stage import executors

    executor = executors().get(role["executor"])
    assert executor is not None
    deadline = time.monotonic() + (spec.agent_timeout_sec or 86400)

    invocation = Invocation(
        role="solver",
        prompt=spec.instruction,
        profile=role,
        container=Container(id=container.id, workdir=workdir),
        deadline=deadline,
        record=journal.recorder("solver", 0),
        transcript=lambda entry: None,
        environ=dict(spec.agent_env),
        task_dir=str(spec.dir),
    )
    try:
        result = executor.invoke(invocation)
    except WallTimeExceeded:
        return {"limit": "wall_time_seconds"}
    journal.append(
        "invocation",
        role="solver",
        invocation=0,
        output=result.output,
        detail={"stop_reason": result.stop_reason, "usage": result.usage},
    )
    return {"limit": None}


def execute_harbor_run(node: Node, context: ExecutionContext) -> NodeResult:
    assert node.task_id is not None
    spec = task_spec(context.plan.dataset, node.task_id)
    directory = attempt_dir(context.plan.dataset.root, attempt_id(node))
    shutil.rmtree(directory, ignore_errors=True)
    journal = ActivityJournal(directory / "activity.jsonl")
    started = time.monotonic()
    container, workdir = _start(spec, image_reference(context, node), node, "attempt")
    try:
        prepare_environment(container, spec, workdir=workdir)
        if spec.healthcheck is not None:
            healthcheck(container, spec, workdir=workdir)
        environment_seconds = time.monotonic() - started
        outcome = _run_agent(node, context, spec, container, workdir, journal)
        committed = container.commit(RUN_REPOSITORY, node.key)
    finally:
        container.remove()
    with context.store.in_use():
        outputs = {
            "activity": OutputRef(digest=context.store.put_file(journal.path), type="blob"),
        }
    return NodeResult(
        outputs=outputs,
        meta={
            "attempt_id": attempt_id(node),
            "limit": outcome["limit"],
            "invocations": 1,
            "seconds": {
                "environment": round(environment_seconds, 3),
                "run": round(time.monotonic() - started - environment_seconds, 3),
            },
            "committed_image": f"{RUN_REPOSITORY}:{node.key}",
            "committed_image_id": committed,
            "workdir": workdir,
        },
    )


def execute_harbor_evaluate(node: Node, context: ExecutionContext) -> NodeResult:
    assert node.task_id is not None
    spec = task_spec(context.plan.dataset, node.task_id)
    run = context.parent_result(node, "run")
    image = str(run.meta.get("committed_image"))
    if not image_exists(image):
        raise EnvironmentFailure(
            "harbor_run_image_missing",
            "the attempt's container image is gone, so its files cannot be verified",
            hint="run the attempt again with --fresh",
        )
    started = time.monotonic()
    trials = context.plan.dataset.root / TRIALS_DIR

    def verify() -> VerifierOutcome:
        if spec.verifier.separate is not None:
            return verify_separately(
                spec,
                image,
                lambda task, reference: _start(task, reference, node, "scoring"),
                trial_root=trials,
            )
        workdir = str(run.meta.get("workdir") or "")
        return _verify_in_agent_image(spec, image, node, workdir, trials)

    outcome = verify_with_retries(verify)
    scored = score_outcome(outcome)
    document = _document(outcome, scored, time.monotonic() - started)
    digest = context.store.put_bytes(json.dumps(document, sort_keys=True).encode())
    meta = {"status": document["status"], "score": document.get("score")}
    return NodeResult(outputs={"result": OutputRef(digest=digest, type="blob")}, meta=meta)


def verify_with_retries(
    verify: Callable[[], VerifierOutcome], retries: int = SANDBOX_RETRIES
) -> VerifierOutcome:
    """A FATAL verification (the sandbox failed, not the verifier) is tried again, in a new
    container; still FATAL after `retries`, the attempt is void: `verifier_sandbox_failed`,
    and the job's Harbor summary says it has no official score."""
    outcome = verify()
    for _ in range(retries):
        if outcome.status != VerifierStatus.FATAL:
            return outcome
        outcome = verify()
    if outcome.status == VerifierStatus.FATAL:
        raise AgevalError(
            VERIFIER_SANDBOX_FAILED,
            f"the sandbox failed while verifying, {retries + 1} times: {outcome.message}",
            hint="the attempt has no score and the job no official score; check the Docker "
            "engine, then run again (the agent's run is reused)",
        )
    return outcome


def _verify_in_agent_image(
    spec: HarborTaskSpec, image: str, node: Node, run_workdir: str, trials: Path
) -> VerifierOutcome:
    container, workdir = _start(spec, image, node, "scoring")
    try:
        return run_verifier(container, spec, workdir=run_workdir or workdir, trial_root=trials)
    finally:
        container.remove()


def _document(outcome: Any, scored: Any, seconds: float) -> dict[str, Any]:
    details: dict[str, Any] = {"verifier": str(outcome.status), "exit_code": outcome.exit_code}
    if scored is None:  # the verifier raised: the attempt has no score
        return {
            "status": "ERROR",
            "error": {
                "type": outcome.code or "verifier_failed",
                "message": outcome.message or "the verifier failed",
                "traceback": getattr(outcome, "traceback", None) or outcome.test_output,
            },
            "details": details,
            "seconds": round(seconds, 3),
            "evaluator_output": outcome.test_output[-4000:],
        }
    details.update(
        passed=scored.passed,
        warning=scored.warning,
        extra={"eval_raw_data": {"rewards": dict(scored.rewards)}},
    )
    return {
        "status": {True: "PASS", False: "FAIL", None: "DONE"}[scored.passed],
        "score": scored.score,
        "details": details,
        "seconds": round(seconds, 3),
        "evaluator_output": outcome.test_output[-4000:],
    }
