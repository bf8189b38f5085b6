"""Non-finite, negative and overflowing timeouts are coded errors naming the file and the field.

Every place a Harbor run takes a duration or a multiplier (task.toml, the job config,
`--env-params`) and the stage budgets of an ageval task.yaml: `ageval lock` and `ageval run`
answer with a stable code, never `internal_error`, and before any container starts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agevalx.cli import main
from tests.unit.conftest import DatasetFactory
from tests.unit.harbor.builders import TaskFactory

pytestmark = pytest.mark.unit

A_YEAR = 365 * 24 * 3600


def _answer(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main([*argv, "--json"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, json.loads(captured.out)


def _ids(cases: list[tuple[str, str]]) -> list[str]:
    return [f"{field}#{index}" for index, (_, field) in enumerate(cases)]


def _error(capsys: pytest.CaptureFixture[str], command: str, *argv: str) -> dict:
    code, document = _answer(capsys, command, *argv, "--agent", "oracle")
    assert code in (1, 2) and document["ok"] is False, document
    error: dict = document["error"]
    assert error["code"] != "internal_error", error
    return error


IMAGE = '[environment]\ndocker_image = "ageval/base:bookworm"\n'

TASK_TOML_CASES = [
    ("[agent]\ntimeout_sec = inf\n" + IMAGE, "agent.timeout_sec"),
    ("[agent]\ntimeout_sec = nan\n" + IMAGE, "agent.timeout_sec"),
    ("[agent]\ntimeout_sec = -inf\n" + IMAGE, "agent.timeout_sec"),
    ("[agent]\ntimeout_sec = 1e999\n" + IMAGE, "agent.timeout_sec"),
    ("[agent]\ntimeout_sec = -5.0\n" + IMAGE, "agent.timeout_sec"),
    ("[agent]\ntimeout_sec = 1e300\n" + IMAGE, "agent.timeout_sec"),
    ("[verifier]\ntimeout_sec = inf\n" + IMAGE, "verifier.timeout_sec"),
    (IMAGE + "build_timeout_sec = nan\n", "environment.build_timeout_sec"),
    (
        IMAGE + '[environment.healthcheck]\ncommand = "true"\ninterval_sec = inf\n',
        "environment.healthcheck.interval_sec",
    ),
    (
        IMAGE + '[environment.healthcheck]\ncommand = "true"\ntimeout_sec = nan\n',
        "environment.healthcheck.timeout_sec",
    ),
    (
        IMAGE + '[verifier.environment]\ndocker_image = "x"\nbuild_timeout_sec = inf\n',
        "verifier.environment.build_timeout_sec",
    ),
]


@pytest.mark.parametrize("command", ["lock", "run"])
@pytest.mark.parametrize(("toml", "field"), TASK_TOML_CASES, ids=_ids(TASK_TOML_CASES))
def test_a_bad_task_toml_duration_is_harbor_task_invalid(
    make_task: TaskFactory,
    capsys: pytest.CaptureFixture[str],
    command: str,
    toml: str,
    field: str,
) -> None:
    task = make_task(toml=toml)
    error = _error(capsys, command, str(task.parent))
    assert (error["code"], error["file"], error["field"]) == (
        "harbor_task_invalid",
        f"{task}/task.toml",
        field,
    )


JOB_CASES = [
    ("timeout_multiplier: .inf\n", "timeout_multiplier"),
    ("timeout_multiplier: .nan\n", "timeout_multiplier"),
    ("agent_timeout_multiplier: -1\n", "agent_timeout_multiplier"),
    ("verifier_timeout_multiplier: .inf\n", "verifier_timeout_multiplier"),
    ("environment_build_timeout_multiplier: -.inf\n", "environment_build_timeout_multiplier"),
    ("agents:\n  - override_timeout_sec: .inf\n", "agents.0.override_timeout_sec"),
    ("agents:\n  - max_timeout_sec: .nan\n", "agents.0.max_timeout_sec"),
    ("verifier:\n  override_timeout_sec: -3\n", "verifier.override_timeout_sec"),
    ("verifier:\n  max_timeout_sec: .inf\n", "verifier.max_timeout_sec"),
    ("environment:\n  override_cpus: .inf\n", "environment.override_cpus"),
]


@pytest.mark.parametrize("command", ["lock", "run"])
@pytest.mark.parametrize(("document", "field"), JOB_CASES, ids=_ids(JOB_CASES))
def test_a_bad_job_config_duration_or_multiplier_is_harbor_job_config_invalid(
    make_task: TaskFactory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    document: str,
    field: str,
) -> None:
    task = make_task()
    job = tmp_path / "job.yaml"
    job.write_text(document)
    error = _error(capsys, command, str(task.parent), "--job-config", str(job))
    assert (error["code"], error["file"], error["field"]) == (
        "harbor_job_config_invalid",
        str(job),
        field,
    )


ENV_PARAMS_CASES = [
    ('{"agent_timeout_sec": 1e999}', "agent_timeout_sec"),
    ('{"agent_timeout_sec": -Infinity}', "agent_timeout_sec"),
    ('{"verifier_timeout_sec": NaN}', "verifier_timeout_sec"),
    ('{"verifier_timeout_sec": 1e300}', "verifier_timeout_sec"),
    ('{"resources": {"cpus": 1e999}}', "resources.cpus"),
]


@pytest.mark.parametrize("command", ["lock", "run"])
@pytest.mark.parametrize(("params", "field"), ENV_PARAMS_CASES, ids=_ids(ENV_PARAMS_CASES))
def test_a_bad_env_params_duration_is_env_params_invalid(
    make_task: TaskFactory,
    capsys: pytest.CaptureFixture[str],
    command: str,
    params: str,
    field: str,
) -> None:
    task = make_task()
    error = _error(capsys, command, str(task.parent), "--env-params", params)
    assert (error["code"], error["field"]) == ("env_params_invalid", "--env-params")
    assert f"--env-params.{field}:" in error["message"]


def test_multipliers_whose_product_overflows_give_a_year_at_most(
    make_task: TaskFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = make_task()
    job = tmp_path / "job.yaml"
    job.write_text("timeout_multiplier: 1.0e+300\nagents:\n  - override_timeout_sec: 1.0e+7\n")
    code, document = _answer(
        capsys, "lock", str(task.parent), "--agent", "oracle", "--job-config", str(job)
    )
    assert code == 0, document
    lock = json.loads(Path(document["locks"][0]["path"]).read_text())
    assert lock["harbor"]["run"]["agent_timeout_sec"] == A_YEAR
    assert lock["task"]["limits"]["wall_time_seconds"] == A_YEAR


@pytest.mark.parametrize(
    "limits",
    [
        {"wall_time_seconds": 10**14},
        {"environment_seconds": A_YEAR + 1},
        {"evaluate_seconds": 2**70},
    ],
)
def test_an_ageval_stage_budget_over_a_year_is_invalid_value(
    make_dataset: DatasetFactory, capsys: pytest.CaptureFixture[str], limits: dict[str, int]
) -> None:
    dataset = make_dataset(task={"limits": limits})
    code, document = _answer(capsys, "lock", str(dataset))
    assert code == 1
    error = document["error"]
    assert (error["code"], error["field"]) == ("invalid_value", f"limits.{next(iter(limits))}")
    assert error["file"].endswith("tasks/demo-task/task.yaml")
