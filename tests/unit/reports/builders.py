"""Result files on disk, built with the result models, the way `ageval run` writes them."""

from __future__ import annotations

import hashlib
from pathlib import Path

from agevalx.results.build import attempt_index
from agevalx.results.metrics import overall_metrics, task_metrics
from agevalx.results.models import AttemptResult, ErrorInfo, JobSummary, NodeRef

CONFIG = "c0ffee00c0ffee00c0ffee00c0ffee00"


def key_of(*parts: object) -> str:
    return hashlib.md5(repr(parts).encode()).hexdigest()


def make_result(
    task_id: str,
    attempt: int,
    status: str = "PASS",
    *,
    agent: str = "oracle",
    model: str | None = None,
    score: float | None = None,
    limit: str | None = None,
    error: str | None = None,
    config_digest: str = CONFIG,
    dataset_id: str = "acme/demo",
) -> AttemptResult:
    """An attempt of `task_id` whose run/evaluate keys derive from everything that makes it."""
    run_key = key_of("run", task_id, attempt, agent, model, config_digest)
    evaluate_key = key_of("evaluate", run_key, status, score)
    nodes = [
        NodeRef(
            id=f"lock:{task_id}", kind="lock", key=key_of("lock", config_digest), outcome="reused"
        ),
        NodeRef(id=f"run:{task_id}#{attempt}", kind="run", key=run_key, outcome="computed"),
        NodeRef(
            id=f"evaluate:{task_id}#{attempt}",
            kind="evaluate",
            key=evaluate_key,
            outcome="computed",
        ),
    ]
    problem = None
    if status == "ERROR":
        problem = ErrorInfo(code="evaluator_error", stage="evaluate", message=error or "boom")
    return AttemptResult(
        attempt_id=f"{task_id}-{attempt}-{run_key[:12]}",
        dataset_id=dataset_id,
        task_id=task_id,
        attempt=attempt,
        status=status,  # type: ignore[arg-type]
        score=score,
        limit=limit,
        error=problem,
        agents={"solver": agent},
        models={"solver": model},
        config_digest=config_digest,
        nodes=nodes,
    )


def write_results(dataset: Path, results: list[AttemptResult]) -> None:
    for result in results:
        path = dataset / ".ageval/runs" / result.attempt_id / "result.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(result.model_dump_json(indent=2) + "\n")


def write_job(dataset: Path, results: list[AttemptResult], k: int, job_id: str = "job-1") -> Path:
    """Write the results and a summary.json indexing them; returns the job directory."""
    write_results(dataset, results)
    tasks = {}
    for task_id in sorted({result.task_id for result in results}):
        mine = [result for result in results if result.task_id == task_id]
        tasks[task_id] = task_metrics(
            [r.status for r in mine], [r.score for r in mine], [r.limit for r in mine], k
        )
    summary = JobSummary(
        job_id=job_id,
        dataset_id=results[0].dataset_id,
        k=k,
        tasks=tasks,
        overall=overall_metrics(list(tasks.values())),
        attempts=[attempt_index(result) for result in results],
        summary_key=key_of("summary", job_id),
    )
    directory = dataset / ".ageval/suite-runs" / job_id
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "summary.json").write_text(summary.model_dump_json(indent=2) + "\n")
    return directory


def mixed_results() -> list[AttemptResult]:
    """Two agents on two tasks, k=3, with FAIL, ERROR, scores and a limit hit."""
    return [
        make_result("alpha", 0, "PASS", score=1.0),
        make_result("alpha", 1, "FAIL", score=0.5, limit="agent_invocations"),
        make_result("alpha", 2, "PASS", score=1.0),
        make_result("beta", 0, "ERROR", error="ValueError: bad input"),
        make_result("beta", 1, "FAIL", score=0.0),
        make_result("beta", 2, "PASS", score=1.0),
        make_result("alpha", 0, "PASS", agent="pi", model="gpt-x"),
        make_result("alpha", 1, "PASS", agent="pi", model="gpt-x"),
        make_result("alpha", 2, "PASS", agent="pi", model="gpt-x"),
        make_result("beta", 0, "FAIL", agent="pi", model="gpt-x"),
        make_result("beta", 1, "FAIL", agent="pi", model="gpt-x", limit="wall_time_seconds"),
        make_result("beta", 2, "PASS", agent="pi", model="gpt-x"),
    ]
