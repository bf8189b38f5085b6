"""What keeps a long job going: retries of infrastructure failures, the spend limits, and
continuing a job whose process was killed.

- `retry_policy`: a node that failed with an infrastructure failure (`agevalx.failures`) is
  computed again, up to `--retry-infra` more times. A run node continues from its attempt's
  last checkpoint (`payload["resume"]`: the same attempt id, its spent wall time and
  invocations counting); an agent or task failure is never retried, nor is an attempt the
  job's spend limit stopped.
- `admission`: once the job's budget (`gateway.budget`) reaches a limit, no new attempt
  starts; its nodes end `skipped` and the job's recap counts them as not run.
- `EngineWatch`: once a node failed because the Docker engine did not answer a call within
  the client's timeout (`engine_unavailable`), the job starts nothing more that needs the
  engine, and retries none of it: a stuck engine would hold each of them as long again. Those
  nodes end `skipped` with the same code; the same command, run again once the engine
  answers, continues the attempts and reuses what finished.
- `continue_interrupted`: re-running the command of a job whose process died (kill -9, a
  reboot) resumes every attempt that process left unfinished from its last checkpoint, as
  `--resume` does for one attempt; sealed attempts are reused from the cache as always.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from agevalx.cache.manifest import ActionManifest
from agevalx.errors import AgevalError
from agevalx.failures import ENGINE_UNAVAILABLE, is_infrastructure
from agevalx.gateway.budget import JOB_LIMIT, JobBudget
from agevalx.graph.context import Admit, Dispatch, ExecutionContext, Retry
from agevalx.graph.nodes import Node
from agevalx.graph.plan import Plan
from agevalx.results.paths import attempt_dir, attempt_id
from agevalx.runner.recovery import process_alive, read_attempt

DEFAULT_RETRY_INFRA = 2
NOT_RETRIED = frozenset({"lock", "summary"})
"""Node kinds never computed again: a lock failure is the configuration's."""
OFF_ENGINE = frozenset({"lock", "summary", "leaderboard"})
"""Node kinds computed on this machine alone: they still run once the engine stopped
answering."""


@dataclass(frozen=True)
class JobLimits:
    """`ageval run`'s job-level options."""

    retry_infra: int = DEFAULT_RETRY_INFRA
    """More tries for a node whose failure is infrastructure."""
    count_infra_as_fail: bool = False
    """Count infrastructure failures as not passed in pass@k (left out by default)."""
    max_cost: float | None = None
    """Stop starting attempts once the agents' cost reaches this many USD."""
    max_tokens: int | None = None
    """... or once their tokens (prompt + completion) reach this many."""

    def budget(self) -> JobBudget:
        return JobBudget(max_cost=self.max_cost, max_tokens=self.max_tokens)


@dataclass
class EngineWatch:
    """Whether a node of the job found the Docker engine not answering (see the module)."""

    stopped: AgevalError | None = None
    """The first such failure."""

    def saw(self, error: AgevalError) -> bool:
        """Note `error`; whether it says the engine stopped answering (itself, or an error
        it was made from: a step may report a failed call under a code of its own)."""
        found: BaseException | None = error
        for _ in range(8):
            if found is None or getattr(found, "code", None) == ENGINE_UNAVAILABLE:
                break
            found = found.__cause__ or found.__context__
        if not isinstance(found, AgevalError):
            return False
        if self.stopped is None:
            self.stopped = found
        return True

    def watching(self, dispatch: Dispatch) -> Dispatch:
        """`dispatch`, noting its failures as they happen, in the worker: the next node a
        freed worker takes is held already, before the scheduler hears of the failure."""

        def watched(node: Node, context: ExecutionContext) -> ActionManifest:
            try:
                return dispatch(node, context)
            except AgevalError as exc:
                self.saw(exc)
                raise

        return watched

    def holds(self, node: Node) -> AgevalError | None:
        """The error that keeps `node` from starting, if the engine stopped answering."""
        if self.stopped is None or node.kind in OFF_ENGINE:
            return None
        return AgevalError(
            ENGINE_UNAVAILABLE,
            f"not started: the Docker engine stopped answering ({self.stopped.message})",
            hint=self.stopped.hint,
        )


def retry_policy(limit: int, *, resume: bool = True, watch: EngineWatch | None = None) -> Retry:
    """Compute a node again after an infrastructure failure, at most `limit` more times; a
    run node from its last checkpoint (`resume`; a cluster's workers start it afresh). With
    `watch`, a node that found the engine not answering is not computed again."""

    def retry(node: Node, error: AgevalError, tries: int) -> bool:
        if watch is not None and watch.saw(error):
            return False
        if tries > limit or node.kind in NOT_RETRIED or error.code == JOB_LIMIT:
            return False
        if not is_infrastructure(error.code):
            return False
        if node.kind == "run" and resume:  # keeping the attempt's id and its spent budget
            node.payload["resume"] = True
        return True

    return retry


def admission(budget: JobBudget, watch: EngineWatch | None = None) -> Admit:
    """Hold back every attempt that would start after the budget reached a limit, and (with
    `watch`) every node that needs the engine once it stopped answering."""

    def admit(node: Node) -> AgevalError | None:
        held = watch.holds(node) if watch is not None else None
        if held is not None:
            return held
        reached = budget.reached
        if node.kind != "run" or reached is None:
            return None
        return AgevalError(
            JOB_LIMIT,
            f"not started: the job reached its spend limit ({budget.describe()})",
            field=reached,
            hint="run the same command with a higher --max-cost / --max-tokens to continue",
        )

    return admit


def continue_interrupted(planned: Plan) -> list[str]:
    """Mark for resumption the planned attempts a dead process left unfinished; their ids.

    An attempt is continued when its attempt.json names a process that no longer runs, with
    the configuration planned now, and it has no result.json, or one that records an
    infrastructure failure (an attempt stopped by the spend limit among them).
    """
    continued = []
    root = planned.dataset.root
    for node in planned.nodes():
        if node.kind != "run" or node.status == "hit" or node.payload.get("fork"):
            continue
        directory = attempt_dir(root, attempt_id(node))
        previous = read_attempt(directory)
        if previous is None or process_alive(previous):
            continue
        assert node.task_id is not None
        if previous.config_digest != planned.lock(node.task_id)["config_digest"]:
            continue
        if not _unfinished(directory / "result.json"):
            continue
        node.payload["resume"] = True
        continued.append(previous.attempt_id)
    return continued


def _unfinished(result: Path) -> bool:
    """No result.json, or one whose error is an infrastructure failure."""
    try:
        document = json.loads(result.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return True
    except (OSError, ValueError):
        return False
    error = document.get("error") if isinstance(document, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return document.get("status") == "ERROR" and isinstance(code, str) and is_infrastructure(code)
