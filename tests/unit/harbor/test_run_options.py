"""A Harbor run's own settings: --job-config, --env-params, and what they do to keys and locks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agevalx.cache.store import CacheStore
from agevalx.cli import main
from agevalx.errors import AgevalError, UsageError
from agevalx.formats.base import dataset_of
from agevalx.formats.harbor.format import open_harbor
from agevalx.formats.harbor.options import HarborOptions, parse_env_params, parse_execution_params
from agevalx.lockfile import BindingRequest
from agevalx.lockfile.models import TaskLock
from agevalx.operations.planning import PlanRequest, plan
from tests.unit.harbor.builders import BASE_TOML, TaskFactory

pytestmark = pytest.mark.unit

ORACLE = BindingRequest(agent="oracle")
JUDGE_TOML = BASE_TOML + '\n[verifier.env]\nJUDGE = "task-judge"\n'


@pytest.fixture
def store(tmp_path: Path) -> CacheStore:
    return CacheStore(tmp_path / "cache")


def keys(dataset: Path | None, store: CacheStore, options: HarborOptions | None) -> dict[str, str]:
    planned = plan(PlanRequest(dataset=dataset, binding=ORACLE, harbor=options), store)
    return {node.id: node.key for node in planned.nodes()}


def test_env_params_map_to_the_run_overrides() -> None:
    params = parse_env_params(
        json.dumps(
            {
                "setup": {"image": "img:1", "workdir": "/app"},
                "resources": {"cpus": 2, "memory_mb": 512},
                "evaluation_env_variables": {"EVAL_API_KEY": "${JUDGE_API_KEY}"},
            }
        )
    )
    overrides = params.overrides()
    assert (overrides.image, overrides.workdir, overrides.cpus, overrides.memory_mb) == (
        "img:1",
        "/app",
        2,
        512,
    )
    assert overrides.evaluation_env_variables == {"EVAL_API_KEY": "${JUDGE_API_KEY}"}


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("{not json", "not JSON"),
        ('{"setup": {"imgae": "x"}}', "setup.imgae"),
        ('{"resources": {"cpus": -1}}', "resources.cpus"),
        ('{"evaluation_env_variables": {"A": 1}}', "evaluation_env_variables.A"),
    ],
)
def test_bad_env_params_are_a_coded_usage_error_naming_the_field(text: str, where: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_env_params(text)
    assert raised.value.code == "env_params_invalid"
    assert where in raised.value.message


def test_the_passed_metric_implies_the_pass_strategy_unless_one_is_given() -> None:
    assert HarborOptions().effective_strategy == "avg"
    assert HarborOptions(primary_metric="passed").effective_strategy == "pass"
    assert HarborOptions(primary_metric="passed", strategy="avg").effective_strategy == "avg"


def test_a_refused_job_config_fails_when_the_options_are_built() -> None:
    with pytest.raises(AgevalError) as raised:
        HarborOptions.build(job_config='{"n_attempts": 3}')
    assert raised.value.code == "harbor_n_attempts_unsupported"


def test_verifier_settings_change_only_the_verifier_keys(
    make_task: TaskFactory, tmp_path: Path, store: CacheStore
) -> None:
    make_task("demo", toml=JUDGE_TOML)
    dataset = tmp_path / "dataset"
    plain = keys(dataset, store, None)
    judged = keys(
        dataset, store, HarborOptions.build(job_config='{"verifier": {"env": {"JUDGE": "x"}}}')
    )
    assert judged["lock:demo"] != plain["lock:demo"]
    assert judged["run:demo#0"] == plain["run:demo#0"]
    assert judged["evaluate:demo#0"] != plain["evaluate:demo#0"]


def test_environment_settings_change_the_run_keys(
    make_task: TaskFactory, tmp_path: Path, store: CacheStore
) -> None:
    make_task("demo")
    dataset = tmp_path / "dataset"
    plain = keys(dataset, store, None)
    moved = keys(
        dataset, store, HarborOptions.build(env_params='{"setup": {"workdir": "/elsewhere"}}')
    )
    assert moved["run:demo#0"] != plain["run:demo#0"]


def test_an_unapplied_job_field_is_reported_and_reruns_nothing_but_the_lock(
    make_task: TaskFactory, tmp_path: Path, store: CacheStore
) -> None:
    make_task("demo")
    dataset = tmp_path / "dataset"
    options = HarborOptions.build(job_config='{"n_concurrent_trials": 4}')
    assert [w.field for w in options.warnings] == ["n_concurrent_trials"]
    plain, reported = keys(dataset, store, None), keys(dataset, store, options)
    assert reported["run:demo#0"] == plain["run:demo#0"]
    assert reported["evaluate:demo#0"] == plain["evaluate:demo#0"]


def test_the_lock_holds_no_value_of_a_host_variable(
    make_task: TaskFactory,
    tmp_path: Path,
    store: CacheStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JUDGE_API_KEY", "sk-very-secret-value")
    make_task("demo")
    variables = {"EVAL_BASE_URL": "https://judge.example/v1", "EVAL_API_KEY": "${JUDGE_API_KEY}"}
    options = HarborOptions.build(
        env_params=json.dumps({"evaluation_env_variables": variables})
    )  # a key needs its endpoint (agevalx.formats.harbor.judges)
    planned = plan(PlanRequest(dataset=tmp_path / "dataset", binding=ORACLE, harbor=options), store)
    lock = planned.node("lock:demo").payload["lock"]
    assert "sk-very-secret-value" not in json.dumps(lock)
    assert "EVAL_API_KEY" in lock["harbor"]["verify"]["env"]
    monkeypatch.setenv("JUDGE_API_KEY", "rotated")
    again = plan(PlanRequest(dataset=tmp_path / "dataset", binding=ORACLE, harbor=options), store)
    assert again.node("evaluate:demo#0").key == planned.node("evaluate:demo#0").key


def test_a_job_config_alone_lists_tasks_from_several_directories(
    make_task: TaskFactory, tmp_path: Path, store: CacheStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_task("one")
    make_task("two")
    make_task("far", root=tmp_path / "elsewhere")
    job = tmp_path / "my-job.yaml"
    job.write_text(
        f"datasets:\n  - path: {tmp_path / 'dataset'}\n    exclude_task_names: [two]\n"
        f"tasks:\n  - path: {tmp_path / 'elsewhere' / 'far'}\n"
    )
    monkeypatch.chdir(tmp_path)
    planned = plan(
        PlanRequest(dataset=None, binding=ORACLE, harbor=HarborOptions.build(job_config=str(job))),
        store,
    )
    assert planned.task_ids == ("one", "far")
    assert dataset_of(planned).dataset_id == "harbor/my-job"
    assert planned.dataset.task_dir("far") == (tmp_path / "elsewhere" / "far").resolve()
    assert planned.dataset.root == tmp_path


def test_harbor_options_on_an_ageval_dataset_are_refused(tmp_path: Path, store: CacheStore) -> None:
    (tmp_path / "ageval.yaml").write_text("format: ageval.dataset/1\n")
    with pytest.raises(UsageError) as raised:
        plan(PlanRequest(dataset=tmp_path, harbor=HarborOptions(primary_metric="passed")), store)
    assert raised.value.code == "harbor_options_on_ageval_dataset"


def test_literal_env_values_enter_the_lock_only_as_digests(
    make_task: TaskFactory, tmp_path: Path, store: CacheStore
) -> None:
    toml = BASE_TOML + '\n[verifier.environment]\nenv = { KEY = "literal-grader-key" }\n'
    toml += '\n[verifier.env]\nJUDGE = "literal-judge-key"\n'
    make_task("demo", toml=toml)
    options = HarborOptions.build(env_params='{"env": {"TOKEN": "literal-run-token"}}')
    planned = plan(PlanRequest(dataset=tmp_path / "dataset", binding=ORACLE, harbor=options), store)
    lock = json.dumps(planned.node("lock:demo").payload["lock"])
    for literal in ("literal-grader-key", "literal-judge-key", "literal-run-token"):
        assert literal not in lock
    assert '"KEY"' in lock and '"JUDGE"' in lock and '"TOKEN"' in lock


def test_graph_show_and_explain_take_the_run_settings(
    make_task: TaskFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_task("demo", toml=JUDGE_TOML)
    dataset = str(tmp_path / "dataset")
    judge = '{"verifier": {"env": {"JUDGE": "x"}}}'

    def show(*extra: str) -> dict[str, str]:
        assert main(["graph", "show", dataset, "--agent", "oracle", *extra, "--json"]) == 0
        return {n["id"]: n["key"] for n in json.loads(capsys.readouterr().out)["nodes"]}

    plain, judged = show(), show("--job-config", judge)
    assert judged["evaluate:demo#0"] != plain["evaluate:demo#0"]
    assert judged["run:demo#0"] == plain["run:demo#0"]
    args = ["graph", "explain", dataset, "--agent", "oracle", "--node", "evaluate:demo#0"]
    assert main([*args, "--job-config", judge, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == "evaluate:demo#0"
    assert main([*args, "--env-params", '{"nope": 1}', "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "env_params_invalid"


def test_ageval_lock_writes_a_harbor_lock_with_the_run_settings(
    make_task: TaskFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_task("demo", toml=JUDGE_TOML)
    dataset = tmp_path / "dataset"
    judge = '{"verifier": {"env": {"JUDGE": "${MY_JUDGE}"}}}'
    args = ["lock", str(dataset), "--agent", "oracle", "--job-config", judge, "--json"]
    assert main(args) == 0
    document = json.loads(capsys.readouterr().out)
    assert [lock["task_id"] for lock in document["locks"]] == ["demo"]
    written = json.loads((dataset / ".ageval/locks/demo.lock.json").read_text())
    assert written["task"]["format"] == "harbor"
    assert set(written["harbor"]["verify"]["env"]) == {"JUDGE"}
    assert TaskLock.model_validate(written).format == "harbor"


def test_changing_the_default_of_a_job_env_template_reruns_the_verifier(
    make_task: TaskFactory, tmp_path: Path, store: CacheStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGEVAL_UNSET_JUDGE", raising=False)
    make_task("demo")
    dataset = tmp_path / "dataset"

    def with_default(value: str) -> dict[str, str]:
        job = {"verifier": {"env": {"JUDGE": "${AGEVAL_UNSET_JUDGE:-" + value + "}"}}}
        return keys(dataset, store, HarborOptions.build(job_config=json.dumps(job)))

    assert with_default("a")["evaluate:demo#0"] != with_default("b")["evaluate:demo#0"]


def test_execution_params_and_dataset_name_key_only_what_they_change(
    make_task: TaskFactory, tmp_path: Path, store: CacheStore
) -> None:
    make_task("demo")
    dataset = tmp_path / "dataset"
    plain = keys(dataset, store, None)
    counted = keys(dataset, store, HarborOptions.build(execution_params='{"k": 3}'))
    assert counted == plain  # k, strategy and concurrency change no task
    slower = keys(
        dataset, store, HarborOptions.build(execution_params='{"run_timeout_multiplier": 2}')
    )
    assert slower["run:demo#0"] != plain["run:demo#0"]
    named = keys(dataset, store, HarborOptions.build(dataset_name="alpha"))
    other = keys(dataset, store, HarborOptions.build(dataset_name="beta"))
    assert named["run:demo#0"] not in (plain["run:demo#0"], other["run:demo#0"])
    assert named["evaluate:demo#0"] != other["evaluate:demo#0"]


def test_the_run_timeout_multiplier_applies_after_the_job_config(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    make_task("demo")  # agent timeout_sec = 120
    options = HarborOptions.build(
        job_config='{"agents": [{"max_timeout_sec": 100}], "timeout_multiplier": 2}',
        execution_params='{"run_timeout_multiplier": 1.5}',
    )
    dataset = open_harbor(tmp_path / "dataset", options, ORACLE)
    assert dataset is not None
    assert dataset.task_spec("demo").agent_timeout_sec == 300.0
    assert options.effective_strategy == "avg"
    picked = HarborOptions.build(execution_params='{"attempt_strategy": "pass"}')
    assert picked.effective_strategy == "pass"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"run_timeout_multiplier": 0}', "run_timeout_multiplier"),
        ('{"run_timeout_multiplier": "Infinity"}', "run_timeout_multiplier"),
        ('{"k": 0}', "k"),
        ('{"n_attempts": 2}', "n_attempts"),
    ],
)
def test_bad_execution_params_are_a_coded_usage_error_naming_the_field(
    text: str, where: str
) -> None:
    with pytest.raises(UsageError) as raised:
        parse_execution_params(text)
    assert raised.value.code == "execution_params_invalid"
    assert raised.value.message.startswith(f"--execution-params.{where}")
