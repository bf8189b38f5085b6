"""`ageval run` with Harbor's job config, --env-params, primary metric and attempt strategies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agevalx.cli import main

pytestmark = pytest.mark.integration

DATA = Path(__file__).resolve().parents[1] / "data"
GOOD_JUDGE = json.dumps({"verifier": {"env": {"JUDGE_MODEL": "good-judge"}}})


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["run", *args, "--agent", "oracle", "--json"])
    return code, json.loads(capsys.readouterr().out)


def outcomes(document: dict[str, Any]) -> dict[str, str]:
    return {node["id"]: node["outcome"] for node in document["nodes"]}


def test_verifier_env_layers_run_flags_over_the_job_config_over_task_toml(
    copy_dataset: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = copy_dataset(DATA / "harbor-jobs") / "tasks"
    code, document = run(capsys, str(tasks), "--task", "judge")
    assert code == 0 and document["results"][0]["status"] == "FAIL"  # task.toml's judge
    code, document = run(capsys, str(tasks), "--task", "judge", "--job-config", GOOD_JUDGE)
    assert document["results"][0]["status"] == "PASS"
    assert document["results"][0]["evaluator_output"] == "judge: good-judge\n"
    assert outcomes(document)["run:judge#0"] == "reused"  # the agent's run did not change
    monkeypatch.setenv("AGEVAL_TEST_JUDGE", "other-judge")
    params = json.dumps({"evaluation_env_variables": {"JUDGE_MODEL": "${AGEVAL_TEST_JUDGE}"}})
    args = ("--task", "judge", "--job-config", GOOD_JUDGE, "--env-params", params)
    code, document = run(capsys, str(tasks), *args)
    assert document["results"][0]["status"] == "FAIL"
    # a value resolved from the host may be a key: it is masked; literal values are shown
    assert document["results"][0]["evaluator_output"] == "judge: ***\n"
    assert outcomes(document)["run:judge#0"] == "reused"
    assert outcomes(document)["evaluate:judge#0"] == "computed"
    lock = (tasks / ".ageval/locks/judge.lock.json").read_text()
    assert "other-judge" not in lock and "AGEVAL_TEST_JUDGE" not in lock


def test_a_job_config_alone_runs_its_datasets_and_tasks_and_reports_unapplied_fields(
    copy_dataset: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    root = copy_dataset(DATA / "harbor-jobs")
    job = tmp_path / "nightly.yaml"
    job.write_text(
        f"datasets:\n  - path: {root / 'tasks'}\n    task_names: [judge]\n"
        f"tasks:\n  - path: {root / 'elsewhere' / 'extra-task'}\n"
        "verifier:\n  env:\n    JUDGE_MODEL: good-judge\n"
        "n_concurrent_trials: 8\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    code, document = run(capsys, "--job-config", str(job))
    assert code == 0
    assert document["dataset"] == "harbor/nightly"
    assert {(r["task_id"], r["status"]) for r in document["results"]} == {
        ("judge", "PASS"),
        ("extra-task", "PASS"),
    }
    assert [w["field"] for w in document["warnings"]] == ["n_concurrent_trials"]
    assert Path(document["summary_path"]).resolve().is_relative_to(work.resolve())


def test_the_pass_strategy_stops_a_task_at_its_first_passed_attempt(
    copy_dataset: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = copy_dataset(DATA / "harbor-jobs") / "tasks"
    args = (str(tasks), "-k", "3", "--job-config", GOOD_JUDGE, "--primary-metric", "passed")
    code, document = run(capsys, *args)
    assert code == 0
    attempts = sorted((r["task_id"], r["attempt"], r["status"]) for r in document["results"])
    assert attempts == [
        ("always-fail", 0, "FAIL"),
        ("always-fail", 1, "FAIL"),
        ("always-fail", 2, "FAIL"),
        ("judge", 0, "PASS"),
    ]
    harbor = document["summary"]["harbor"]
    assert (harbor["metric_name"], harbor["strategy"]) == ("correct", "pass")
    assert harbor["primary"] == 0.5
    assert document["summary"]["overall"]["pass_at_k"] == 0.5
    runs = [n["id"] for n in document["nodes"] if n["kind"] == "run"]
    assert len(runs) == 4 and len([n for n in document["nodes"] if n["kind"] == "lock"]) == 2
    code, again = run(capsys, *args)
    assert again["counts"] == {
        "reused": 2 + 2 + 4 + 4,
        "computed": 0,
        "failed": 0,
        "blocked": 0,
        "skipped": 0,
    }
    assert again["summary"]["harbor"] == harbor


def test_a_fractional_reward_is_done_with_its_score_not_failed(
    copy_dataset: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = copy_dataset(DATA / "harbor")
    code, document = run(capsys, str(dataset), "--task", "fractional", "--task", "pass")
    assert code == 0
    by_task = {r["task_id"]: r for r in document["results"]}
    assert (by_task["fractional"]["status"], by_task["fractional"]["score"]) == ("DONE", 0.5)
    overall = document["summary"]["overall"]
    assert (overall["done"], overall["passed"], overall["pass_rate"]) == (1, 1, 1.0)
    assert document["summary"]["harbor"]["avg_score"] == 0.75
