"""Seed 003's run rules through `ageval run`, on real containers: users that are not
applied, `--dataset-name`, `--execution-params`, top-level warnings, `reward` beside
`correct`, an agent that replaces /logs, a test.sh that stops its container, and GPU
requests this engine cannot meet (it has no GPU)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from agevalx.cache.location import default_cache_dir
from agevalx.cache.store import CacheStore
from agevalx.cli import main
from agevalx.cli.run import _recap
from agevalx.environments.container import ATTEMPT_LABEL
from agevalx.formats.harbor.options import HarborOptions
from agevalx.lockfile import BindingRequest
from agevalx.operations.request import RunRequest
from agevalx.operations.run import run as run_attempts
from tests.integration.engine_events import EVENTS

pytestmark = pytest.mark.integration

DATA = Path(__file__).resolve().parents[1] / "data"
TASKS = DATA / "harbor-issue14"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["run", *args, "--agent", "oracle", "--json"])
    return code, json.loads(capsys.readouterr().out)


def outcomes(document: dict[str, Any]) -> dict[str, str]:
    return {node["id"]: node["outcome"] for node in document["nodes"]}


# --- [agent] user / [verifier] user ------------------------------------------------------------


def test_agent_and_verifier_users_are_reported_unmapped_and_not_applied(
    copy_dataset, capsys
) -> None:
    dataset = copy_dataset(TASKS)
    code, document = run(capsys, str(dataset), "--task", "users")
    assert code == 0
    (result,) = document["results"]
    assert (result["status"], result["score"]) == ("PASS", 1.0)  # test.sh ran as root
    unapplied = {
        w["field"] for w in document["warnings"] if w["code"] == "harbor_task_field_unapplied"
    }
    assert unapplied == {"agent.user", "verifier.user"}


# --- --dataset-name ------------------------------------------------------------------------------


def test_results_are_reused_only_under_the_same_dataset_name(copy_dataset, capsys) -> None:
    dataset = copy_dataset(TASKS)
    code, first = run(capsys, str(dataset), "--task", "fraction", "--dataset-name", "alpha")
    assert code == 0
    assert first["results"][0]["dataset_name"] == "alpha"
    lock = json.loads((dataset / ".ageval/locks/fraction.lock.json").read_text())
    assert lock["harbor"]["run"]["dataset_name"] == "alpha"

    _, other = run(capsys, str(dataset), "--task", "fraction", "--dataset-name", "beta")
    assert outcomes(other)["run:fraction#0"] == "computed"
    assert other["results"][0]["dataset_name"] == "beta"
    assert other["results"][0]["attempt_id"] != first["results"][0]["attempt_id"]

    _, again = run(capsys, str(dataset), "--task", "fraction", "--dataset-name", "alpha")
    assert outcomes(again)["run:fraction#0"] == "reused"
    assert again["results"][0]["attempt_id"] == first["results"][0]["attempt_id"]


def test_a_dataset_name_that_is_not_a_name_is_a_usage_error(copy_dataset, capsys) -> None:
    dataset = copy_dataset(TASKS)
    code, document = run(capsys, str(dataset), "--task", "fraction", "--dataset-name", "../x")
    assert code == 2
    assert document["error"]["code"] == "dataset_name_invalid"


# --- --execution-params --------------------------------------------------------------------------


def test_run_timeout_multiplier_applies_on_top_of_the_task_timeout(copy_dataset, capsys) -> None:
    # `slow`: agent timeout 2 s, solve.sh takes 6 s. Each side has 4 s of slack: the oracle
    # must be stopped before 6 s (a machine at 100% once stopped a 4 s solve.sh too late), and
    # must finish within 2 s x 5 = 10 s.
    dataset = copy_dataset(TASKS)
    code, plain = run(capsys, str(dataset), "--task", "slow")
    assert code == 0
    assert (plain["results"][0]["status"], plain["results"][0]["limit"]) == (
        "FAIL",
        "wall_time_seconds",
    )
    params = json.dumps({"run_timeout_multiplier": 5, "k": 2})
    code, longer = run(capsys, str(dataset), "--task", "slow", "--execution-params", params)
    assert code == 0
    assert [(r["attempt"], r["status"], r["limit"]) for r in longer["results"]] == [
        (0, "PASS", None),
        (1, "PASS", None),
    ]
    lock = json.loads((dataset / ".ageval/locks/slow.lock.json").read_text())
    assert lock["harbor"]["run"]["agent_timeout_sec"] == 10.0


def test_the_run_timeout_multiplier_multiplies_the_job_configs_timeout(
    copy_dataset, capsys, tmp_path: Path
) -> None:
    dataset = copy_dataset(TASKS)
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"agents": [{"override_timeout_sec": 3}], "timeout_multiplier": 2}))
    params = json.dumps({"run_timeout_multiplier": 1.5})
    code, _ = run(
        capsys, str(dataset), "--task", "fraction", "--job-config", str(job),
        "--execution-params", params,
    )  # fmt: skip
    assert code == 0
    lock = json.loads((dataset / ".ageval/locks/fraction.lock.json").read_text())
    assert lock["harbor"]["run"]["agent_timeout_sec"] == 9.0


@pytest.mark.parametrize(
    "params", ['{"run_timeout_multiplier": 0}', '{"retries": 3}', '{"k": 0}', "not json"]
)
def test_bad_execution_params_are_a_usage_error(copy_dataset, capsys, params: str) -> None:
    dataset = copy_dataset(TASKS)
    code, document = run(capsys, str(dataset), "--task", "fraction", "--execution-params", params)
    assert code == 2
    assert document["error"]["code"] == "execution_params_invalid"
    assert document["error"]["field"] == "--execution-params"


# --- top-level warnings and `reward` beside `correct` -----------------------------------------


def test_invalid_rewards_are_top_level_warnings_and_reward_is_reported_beside_correct(
    copy_dataset, capsys
) -> None:
    dataset = copy_dataset(TASKS)
    code, document = run(
        capsys, str(dataset), "--task", "invalid", "--task", "fraction",
        "--primary-metric", "passed",
    )  # fmt: skip
    assert code == 0
    warnings = [w for w in document["warnings"] if w["code"] == "verifier_result_invalid"]
    assert len(warnings) == 1 and warnings[0]["message"].startswith("invalid#0 (")
    harbor = document["summary"]["harbor"]
    assert harbor["metric_name"] == "correct"
    assert harbor["primary"] == 0.0  # invalid: not passed; fraction: no pass result
    assert harbor["reward"] == 0.25  # Harbor's reward: mean of 0 and 0.5
    assert [w["code"] for w in harbor["warnings"]] == ["verifier_result_invalid"]
    summary = json.loads(Path(document["summary_path"]).read_text())
    assert summary["harbor"]["reward"] == 0.25


def test_the_recap_shows_the_invalid_reward_warning_and_the_reward(copy_dataset, capsys) -> None:
    dataset = copy_dataset(TASKS)
    request = RunRequest(
        dataset=dataset,
        tasks=("invalid", "fraction"),
        binding=BindingRequest(agent="oracle"),
        harbor=HarborOptions.build(primary_metric="passed"),
    )
    with CacheStore(default_cache_dir()) as store:
        outcome = run_attempts(request, store)
    capsys.readouterr()
    _recap(outcome)
    recap = " ".join(capsys.readouterr().out.split())
    assert "[verifier_result_invalid] invalid#0" in recap
    assert "correct (primary) 0.000, reward 0.250" in recap


# --- an agent that replaces /logs, a test.sh that stops its container -------------------------


@pytest.mark.parametrize(
    ("task", "path"), [("logs-file", "/logs"), ("agent-logs-file", "/logs/agent")]
)
def test_an_agent_that_replaces_the_log_directories_fails_the_task_with_a_code(
    copy_dataset, capsys, task: str, path: str
) -> None:
    dataset = copy_dataset(TASKS)
    code, document = run(capsys, str(dataset), "--task", task)
    assert code == 1
    error = document["results"][0]["error"]
    assert (error["code"], error["stage"]) == ("harbor_logs_replaced", "run")
    assert f"replaced {path} " in error["message"]


def test_a_test_sh_that_kills_pid_1_is_a_sandbox_failure_retried(copy_dataset, capsys) -> None:
    dataset = copy_dataset(TASKS)
    code, document = run(capsys, str(dataset), "--task", "kill-init")
    assert code == 1
    (result,) = document["results"]
    assert result["error"]["code"] == "verifier_sandbox_failed"
    message = result["error"]["message"]
    assert "3 times" in message and "the container stopped" in message
    assert not [w for w in document["warnings"] if w["code"] == "verifier_result_invalid"]


# --- GPUs (this engine has none) -----------------------------------------------------------------


def _containers_created(document: dict[str, Any], since: float) -> list[str]:
    """The containers the engine created for the attempt since `since` (any stage)."""
    (result,) = document["results"]
    return EVENTS.created(since, ATTEMPT_LABEL, result["attempt_id"])


def _gpu_failure(document: dict[str, Any]) -> dict[str, Any]:
    (result,) = document["results"]
    assert result["status"] == "ERROR"
    assert outcomes(document)[f"run:{result['task_id']}#0"] == "failed"
    error: dict[str, Any] = result["error"]
    assert (error["code"], error["stage"]) == ("environment_gpu_unavailable", "environment")
    return error


@pytest.mark.parametrize(
    ("task", "extra", "who"),
    [
        ("gpu", [], "the task container"),
        ("typed-gpu", [], "the task container"),
        ("separate-gpu", [], "the verifier environment"),
        ("fraction", ["--env-params", '{"resources": {"gpus": 1}}'], "the task container"),
    ],
)
def test_harbor_gpu_requests_fail_before_any_container_starts(
    copy_dataset, capsys, task: str, extra: list[str], who: str
) -> None:
    dataset = copy_dataset(TASKS)
    since = time.time() - 1
    started = time.monotonic()
    code, document = run(capsys, str(dataset), "--task", task, *extra)
    assert code == 1
    assert time.monotonic() - started < 60
    assert _gpu_failure(document)["message"].startswith(f"{who}: 1 GPU(s)")
    assert _containers_created(document, since) == []


def test_the_job_configs_override_gpus_fails_before_any_container_starts(
    copy_dataset, capsys, tmp_path: Path
) -> None:
    dataset = copy_dataset(TASKS)
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"environment": {"override_gpus": 2}}))
    since = time.time() - 1
    code, document = run(capsys, str(dataset), "--task", "fraction", "--job-config", str(job))
    assert code == 1
    assert _gpu_failure(document)["message"].startswith("the task container: 2 GPU(s)")
    assert _containers_created(document, since) == []


@pytest.mark.parametrize(
    ("task", "who"),
    [
        ("verifier-gpu", "the scoring container"),
        ("typed-gpu", "the attempt container"),
        # `gpu_types` alone asks for a GPU of that type: no count is not no GPU (seed 000).
        ("types-only-gpu", "the attempt container"),
    ],
)
def test_ageval_gpu_parameters_fail_before_any_container_starts(
    copy_dataset, capsys, task: str, who: str
) -> None:
    dataset = copy_dataset(DATA / "gpus")
    since = time.time() - 1
    code = main(["run", str(dataset), "--task", task, "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 1
    assert _gpu_failure(document)["message"].startswith(f"{who}: 1 GPU(s)")
    assert _containers_created(document, since) == []
