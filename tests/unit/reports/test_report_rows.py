"""Rows of a report: grouping, metrics from agevalx.results.metrics, ranking, node keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from agevalx.reports import build_report
from agevalx.results.metrics import overall_metrics, pass_at_k, pass_hat_k, task_metrics
from agevalx.results.models import AttemptResult
from tests.unit.reports.builders import make_result, mixed_results, write_results

pytestmark = pytest.mark.unit


def test_one_row_per_task_agent_and_model_sorted(dataset: Path) -> None:
    report = build_report(dataset)

    assert [(row.task_id, row.agent, row.model) for row in report.tasks] == [
        ("alpha", "oracle", "-"),
        ("alpha", "pi", "gpt-x"),
        ("beta", "oracle", "-"),
        ("beta", "pi", "gpt-x"),
    ]
    assert {row.scope for row in report.tasks} == {"task"}


def test_task_metrics_are_the_metrics_module_over_the_rows_attempts(dataset: Path) -> None:
    report = build_report(dataset)

    for row in report.tasks:
        mine = [
            r
            for r in mixed_results()
            if r.task_id == row.task_id and r.agents == row.agents and r.models == row.models
        ]
        expected = task_metrics(
            [r.status for r in mine], [r.score for r in mine], [r.limit for r in mine], 3
        )
        assert row.metrics == expected


def test_counts_and_limits_of_a_row(dataset: Path) -> None:
    beta_oracle = build_report(dataset).tasks[2]

    metrics = beta_oracle.metrics
    assert (metrics.n, metrics.passed, metrics.failed, metrics.errors) == (3, 1, 1, 1)
    assert metrics.pass_rate == pytest.approx(1 / 3)
    assert metrics.avg_score == pytest.approx(0.5)
    assert build_report(dataset).tasks[0].metrics.limits == {"agent_invocations": 1}


def test_pass_at_k_uses_k_of_the_job_over_every_sample(tmp_path: Path) -> None:
    # two samples of k=3 (e.g. after --fresh): n=6, c=2, pass@3 = 1 - C(4,3)/C(6,3) = 0.8
    first = [make_result("alpha", a, s) for a, s in enumerate(["PASS", "FAIL", "FAIL"])]
    second = [
        make_result("alpha", a, s, config_digest="d" * 32)
        for a, s in enumerate(["FAIL", "PASS", "FAIL"])
    ]
    write_results(tmp_path / "ds", first + second)

    report = build_report(tmp_path / "ds")
    row = report.tasks[0]

    assert report.k == 3
    assert row.metrics.n == 6
    assert row.metrics.pass_at_k == pass_at_k(6, 2, 3) == pytest.approx(0.8)
    assert row.metrics.pass_hat_k == pass_hat_k(6, 2, 3) == 0.0
    assert row.config_digests == sorted({"c0ffee00" * 4, "d" * 32})


def test_an_overall_row_per_agent_and_model_best_pass_at_k_first(dataset: Path) -> None:
    report = build_report(dataset)

    assert [(row.agent, row.tasks) for row in report.overall] == [("pi", 2), ("oracle", 2)]
    for overall in report.overall:
        own = [row.metrics for row in report.tasks if row.agents == overall.agents]
        assert overall.metrics == overall_metrics(own)
        assert overall.scope == "overall" and overall.task_id is None


def test_every_row_carries_the_config_digest_and_node_keys_of_its_attempts(
    dataset: Path,
) -> None:
    by_id: dict[str, AttemptResult] = {r.attempt_id: r for r in mixed_results()}

    report = build_report(dataset)

    for row in [*report.overall, *report.tasks]:
        assert row.attempts, row
        assert row.config_digests == sorted({a.config_digest for a in row.attempts})
        for attempt in row.attempts:
            keys = {node.kind: node.key for node in by_id[attempt.attempt_id].nodes}
            assert (attempt.run_key, attempt.evaluate_key) == (keys["run"], keys["evaluate"])
    assert sum(len(row.attempts) for row in report.overall) == len(mixed_results())


def test_an_error_attempt_carries_its_code_and_first_message_line(tmp_path: Path) -> None:
    write_results(tmp_path / "ds", [make_result("t", 0, "ERROR", error="Boom: x\ntraceback")])

    attempt = build_report(tmp_path / "ds").tasks[0].attempts[0]

    assert attempt.error == "evaluator_error: Boom: x"


def test_several_roles_are_labelled_role_equals_value(tmp_path: Path) -> None:
    result = make_result("t", 0).model_copy(
        update={
            "agents": {"solver": "pi", "critic": "codex"},
            "models": {"solver": "gpt-x", "critic": None},
        }
    )
    write_results(tmp_path / "ds", [result])

    row = build_report(tmp_path / "ds").tasks[0]

    assert (row.agent, row.model) == ("critic=codex, solver=pi", "critic=-, solver=gpt-x")


def test_rows_carry_the_standard_error_of_the_pass_rate_over_repeats() -> None:
    from agevalx.reports.build import _binomial_stderr

    three_of_four = task_metrics(["PASS", "PASS", "PASS", "FAIL"], [None] * 4, [None] * 4, 4)
    assert _binomial_stderr(three_of_four) == round((0.75 * 0.25 / 4) ** 0.5, 6)
    single = task_metrics(["PASS"], [None], [None], 1)
    assert _binomial_stderr(single) is None  # one attempt has no spread to measure
