"""An ageval task's verifier: its evaluator.py, run by a small stdlib-only runner.

The scoring container is fresh: the committed image of the attempt container when this engine
still has it, otherwise the task image with the cached workspace and home restored. Evaluator
and task files enter it only now, after the run stage, into a directory made for this
evaluation under a random name (`/.ageval-eval-<nonce>/`), so nothing the agent left can stand
in for them or for the result. The runner runs on ageval's own Python, mounted read-only
(`evaluation/runtime.py`), not the image's. /tmp is a tmpfs of evaluation.tmpfs_mb.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import time
import uuid
from pathlib import Path
from typing import Any

from agevalx.environments.container import HOME, WORKSPACE, AttemptContainer, ContainerSpec
from agevalx.environments.engine import EnvironmentFailure
from agevalx.evaluation.result import OUTPUT_TAIL, EvaluationResult, checked
from agevalx.evaluation.runtime import EvaluatorRuntime, evaluator_runtime
from agevalx.evaluation.session import RunFacts, ScoringSession
from agevalx.formats.base import Verifier
from agevalx.lockfile.models import TaskLock

RUNNER = Path(__file__).with_name("runner_script.py")


def scoring_spec(lock: TaskLock, name_hint: str) -> ContainerSpec:
    """The scoring container's settings: evaluate_host's options (user, platform and python
    version inherited from the job, never its network), /tmp a tmpfs, `verifier_gpus`."""
    host = lock.binding.evaluate_host["environment_options"]
    parameters = lock.task.parameters
    return ContainerSpec(
        image="",
        name_hint=name_hint,
        gpus=parameters.get("verifier_gpus"),
        gpu_types=tuple(str(kind) for kind in parameters.get("gpu_types") or ()),
        network=host.get("network"),
        user=host.get("user") or lock.binding.environment_options.get("user"),
        tmpfs_mb=lock.task.evaluation.tmpfs_mb,
        platform=host.get("platform"),
    )


def _context_document(
    lock: TaskLock, run: RunFacts, private: str, runtime: EvaluatorRuntime
) -> dict[str, Any]:
    return {
        "evaluator": f"{private}/task/evaluator.py",
        "workspace": WORKSPACE,
        "home": HOME,
        "task_dir": f"{private}/task",
        "params": lock.task.parameters,
        "limit": run.limit,
        "run": {"invocations": run.invocations, "limit": run.limit},
        "python_version": runtime.version,
    }


def evaluate_in(
    container: AttemptContainer,
    task_dir: Path,
    lock: TaskLock,
    run: RunFacts,
    runtime: EvaluatorRuntime,
) -> dict[str, Any]:
    """Copy the evaluator in, run it within evaluate_seconds, return its result document.

    The container must have `runtime` mounted."""
    private = f"/.ageval-eval-{uuid.uuid4().hex}"
    container.root_exec(f"mkdir -m 700 {private}")
    container.put_directory(task_dir, f"{private}/task")
    context = _context_document(lock, run, private, runtime)
    container.put_files(
        private,
        {
            "evaluate.py": (RUNNER.read_bytes(), 0o644),
            "context.json": (json.dumps(context).encode(), 0o644),
        },
    )
    seconds = lock.task.limits.evaluate_seconds
    command = runtime.command(
        f"{private}/evaluate.py", f"{private}/context.json", f"{private}/result.json"
    )
    result = container.exec(
        shlex.join(command), timeout=seconds, user="root", environment=runtime.environment
    )
    if result.timed_out:
        raise EnvironmentFailure(
            "evaluate_timeout", f"evaluator.py did not finish within {seconds} s (evaluate_seconds)"
        )
    raw = container.read_file(f"{private}/result.json")
    if raw is None:
        return {
            "status": "ERROR",
            "error": {
                "type": "EvaluatorDidNotRun",
                "message": f"the evaluator runner exited with {result.exit_code}",
            },
            "evaluator_output": result.output[-OUTPUT_TAIL:],
        }
    document: dict[str, Any] = json.loads(raw)
    document["evaluator_output"] = result.output[-OUTPUT_TAIL:]
    return document


class EvaluatorPy(Verifier):
    """Scores with the task's evaluator.py in a container of the attempt's final filesystem."""

    def verify(self, session: ScoringSession) -> EvaluationResult:
        started = time.monotonic()
        runtime = evaluator_runtime(session.cache_dir)
        spec = scoring_spec(session.lock, f"eval-{session.attempt_id}")
        spec = dataclasses.replace(spec, mounts=(*spec.mounts, runtime.mount))
        container = session.attempt_container(spec)
        try:
            document = evaluate_in(container, session.task_dir, session.lock, session.run, runtime)
        finally:
            session.discard(container)
        document["seconds"] = round(time.monotonic() - started, 3)
        return checked(document)
