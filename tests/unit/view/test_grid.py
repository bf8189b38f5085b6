"""The grid: a column per (agent, model, job), the report's metrics, forks left out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agevalx.view.grid import Grid, build_grid
from agevalx.view.source import ViewSource
from tests.unit.reports.builders import make_result, mixed_results, write_job, write_results

pytestmark = pytest.mark.unit


def grid_of(root: Path, job: str | None = None) -> Grid:
    return build_grid(ViewSource(root=root, job=job, cache_dir=root / "no-cache"))


def test_each_job_and_binding_is_a_column_with_the_reports_metrics(tmp_path: Path) -> None:
    write_job(tmp_path, mixed_results(), k=3)

    grid = grid_of(tmp_path)

    assert [(c.agent, c.model, c.job_id) for c in grid.columns] == [
        ("oracle", "-", "job-1"),
        ("pi", "gpt-x", "job-1"),
    ]
    oracle, pi = grid.columns
    assert grid.tasks == ["alpha", "beta"]
    assert [a.status for a in oracle.cells["beta"].attempts] == ["ERROR", "FAIL", "PASS"]
    assert oracle.cells["alpha"].metrics.pass_at_k == 1.0
    assert pi.cells["beta"].metrics.passed == 1
    assert (oracle.metrics.n, oracle.metrics.passed) == (6, 3)


def test_attempts_of_no_job_form_their_own_column(tmp_path: Path) -> None:
    write_job(tmp_path, [make_result("alpha", 0), make_result("alpha", 1)], k=2)
    write_results(tmp_path, [make_result("beta", 0, "FAIL", agent="pi")])

    grid = grid_of(tmp_path)

    assert [(c.agent, c.job_id) for c in grid.columns] == [("oracle", "job-1"), ("pi", None)]
    assert list(grid.columns[1].cells) == ["beta"]


def test_a_fork_is_not_counted_in_any_column(tmp_path: Path) -> None:
    fork = make_result("alpha", 0, "FAIL", agent="pi").model_copy(
        update={"forked_from": {"source": "alpha-0-x", "checkpoint": "c" * 32}}
    )
    write_results(tmp_path, [make_result("alpha", 0), fork])

    grid = grid_of(tmp_path)

    assert [c.agent for c in grid.columns] == ["oracle"]
    assert fork.attempt_id in grid.results


def test_a_job_directory_shows_only_that_job(tmp_path: Path) -> None:
    write_job(tmp_path, [make_result("alpha", 0)], k=1, job_id="job-a")
    write_job(tmp_path, [make_result("beta", 0, agent="pi")], k=1, job_id="job-b")

    grid = grid_of(tmp_path, job="job-b")

    assert [c.job_id for c in grid.columns] == ["job-b"]
    assert list(grid.results) == [make_result("beta", 0, agent="pi").attempt_id]


def test_a_rescored_job_keeps_the_verdicts_it_recorded_and_says_so(tmp_path: Path) -> None:
    before = [make_result("alpha", 0, "PASS", score=1.0), make_result("alpha", 1, "PASS")]
    write_job(tmp_path, before, k=2)
    rescored = before[0].model_copy(update={"status": "FAIL", "score": 0.0})
    write_results(tmp_path, [rescored])

    grid = grid_of(tmp_path)

    (column,) = grid.columns
    assert [a.status for a in column.cells["alpha"].attempts] == ["PASS", "PASS"]
    assert column.warning is not None and "report_stale_result" in column.warning
    assert grid.results[rescored.attempt_id].status == "FAIL"


def test_a_result_whose_id_is_a_path_is_left_out_with_a_warning(tmp_path: Path) -> None:
    write_results(tmp_path, [make_result("alpha", 0)])
    crafted = tmp_path / ".ageval/runs/crafted/result.json"
    crafted.parent.mkdir(parents=True)
    document = json.loads(make_result("beta", 0).model_dump_json())
    crafted.write_text(json.dumps({**document, "attempt_id": "../../../etc"}))

    grid = grid_of(tmp_path)

    assert "../../../etc" not in grid.results
    assert grid.tasks == ["alpha"]
    assert any("../../../etc" in warning for warning in grid.warnings)


@pytest.mark.parametrize(
    ("statuses", "verdict"),
    [
        (["PASS", "PASS"], "PASS"),
        (["FAIL", "ERROR"], "FAIL"),
        (["PASS", "FAIL"], "MIXED"),
        (["DONE", "DONE"], "DONE"),
        (["PASS", "DONE"], "PASS"),
    ],
)
def test_a_cell_verdict_sums_up_its_attempts(
    tmp_path: Path, statuses: list[str], verdict: str
) -> None:
    write_results(tmp_path, [make_result("alpha", i, s) for i, s in enumerate(statuses)])

    (column,) = grid_of(tmp_path).columns

    assert column.cells["alpha"].verdict == verdict


def test_tokens_and_cost_are_unknown_until_results_record_them(tmp_path: Path) -> None:
    write_results(tmp_path, [make_result("alpha", 0)])

    (column,) = grid_of(tmp_path).columns

    assert (column.tokens, column.cost) == (None, None)
    assert (column.cells["alpha"].tokens, column.cells["alpha"].cost) == (None, None)


def test_tokens_and_cost_come_from_the_gateways_usage_per_role(tmp_path: Path) -> None:
    from agevalx.results.usage import ModelUsage

    priced = ModelUsage(requests=2, prompt_tokens=20, completion_tokens=13, cost_usd=0.25)
    judge = ModelUsage(requests=1, prompt_tokens=5, completion_tokens=2, cost_usd=0.5)
    unpriced = ModelUsage(requests=1, prompt_tokens=7, completion_tokens=1, cost_usd="unknown")
    results = [
        make_result("alpha", 0).model_copy(update={"usage": {"solver": priced, "critic": judge}}),
        make_result("beta", 0).model_copy(update={"usage": {"solver": unpriced}}),
    ]
    write_results(tmp_path, results)

    (column,) = grid_of(tmp_path).columns

    alpha, beta = column.cells["alpha"], column.cells["beta"]
    assert (alpha.tokens, alpha.cost) == (40, 0.75)
    assert (beta.tokens, beta.cost) == (8, None)  # an unknown price is never shown as 0
    assert column.tokens == 48
