"""`ageval run`'s recap: the class beside each ERROR, and loud lines for infrastructure."""

from __future__ import annotations

from pathlib import Path

import pytest

from agevalx.cache.store import CacheStore
from agevalx.cli.run import _recap
from agevalx.errors import AgevalError
from agevalx.gateway.budget import JobBudget
from agevalx.graph.execute import ExecutionReport, NodeReport
from agevalx.operations.planning import PlanRequest, plan
from agevalx.operations.run import RunOutcome
from agevalx.results.build import attempt_result, job_summary
from tests.unit.graph.conftest import write_dataset

pytestmark = pytest.mark.unit


def _outcome(
    tmp_path: Path, errors: list[AgevalError | None], *, count_infra_as_fail: bool = False
) -> RunOutcome:
    store = CacheStore(tmp_path / "cache")
    planned = plan(PlanRequest(dataset=write_dataset(tmp_path / "ds"), k=len(errors)), store)
    tries = {"run:alpha#0": [AgevalError("environment_lost", "killed")]}
    results = [
        attempt_result(
            planned,
            store,
            "alpha",
            attempt,
            {},
            {},
            {f"run:alpha#{attempt}": error} if error else {},
            tries=tries,
        )
        for attempt, error in enumerate(errors)
    ]
    summary = job_summary(
        planned, results, len(errors), "key", count_infra_as_fail=count_infra_as_fail
    )
    return RunOutcome(planned, ExecutionReport(nodes=[]), results, summary, tmp_path / "s.json")


def test_the_recap_names_the_class_of_each_error_and_the_infrastructure_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    errors = [
        AgevalError("agent_crashed", "exit 1"),
        AgevalError("environment_lost", "the container was removed"),
        AgevalError("model_upstream_unavailable", "503"),
        AgevalError("environment_lost", "again"),
    ]
    _recap(_outcome(tmp_path, errors))
    lines = capsys.readouterr().out.splitlines()
    assert "ERROR (agent) alpha#0" in lines
    assert "ERROR (infrastructure) alpha#1" in lines
    assert "  retried after: environment_lost (run)" in lines
    assert (
        "3 infrastructure failures, not scored (environment_lost×2, "
        "model_upstream_unavailable×1); --count-infra-as-fail counts them"
    ) in lines
    assert any(line.startswith("pass rate 0.000, pass@4 -") for line in lines)


def test_the_recap_says_when_infrastructure_failures_were_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    errors = [AgevalError("disk_full", "ENOSPC")]
    _recap(_outcome(tmp_path, errors, count_infra_as_fail=True))
    out = capsys.readouterr().out
    assert (
        "1 infrastructure failure, counted as not passed (--count-infra-as-fail): disk_full×1"
        in out
    )
    assert "not scored" not in out


def test_the_recap_shows_the_jobs_retries_and_spend_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = _outcome(tmp_path, [AgevalError("job_limit_reached", "the job's cost limit")])
    node = outcome.plan.node("run:alpha#0")
    broken = AgevalError("model_stream_broken", "stalled")
    outcome.report = ExecutionReport(nodes=[NodeReport(node, "failed", tries=[broken, broken])])
    outcome.budget = JobBudget(max_cost=0.01)
    outcome.budget.add(1000, 200, 0.012)
    outcome.not_run = 5
    _recap(outcome)
    out = capsys.readouterr().out
    assert "1 attempt stopped by the job's spend limit, not scored" in out
    assert "infrastructure failure" not in out
    assert "retried 2 tries after: model_stream_broken×2" in out
    assert "job spend: $0.0120 of --max-cost $0.01, 1,200 tokens" in out
    assert (
        "the job's spend limit (job_cost) was reached: 1 attempt(s) stopped at their next model "
        "request, 5 not run; the same command with a higher --max-cost continues the job"
    ) in out


def test_no_loud_line_without_infrastructure_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _recap(_outcome(tmp_path, [AgevalError("image_build_failed", "no")]))
    out = capsys.readouterr().out
    assert "ERROR (task) alpha#0" in out
    assert "infrastructure" not in out.replace("ERROR (task)", "")
