"""Loader rules: task discovery, job config refusals and reports, layering, templates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agevalx.formats.harbor import HarborError, RunOverrides, load_harbor_tasks
from agevalx.formats.harbor import errors as codes
from tests.unit.harbor.builders import BASE_TOML, TaskFactory

pytestmark = pytest.mark.unit


def _fails(dataset: Path | None, job: Any = None, **kwargs: Any) -> HarborError:
    with pytest.raises(HarborError) as caught:
        load_harbor_tasks(dataset, job, environ={}, **kwargs)
    return caught.value


def _names(dataset: Path | None, job: Any = None, **kwargs: Any) -> list[str]:
    loaded = load_harbor_tasks(dataset, job, environ={}, **kwargs)
    return [spec.name for spec in loaded.tasks]


# --- discovery --------------------------------------------------------------------------


def test_dataset_children_are_tasks_sorted_and_non_tasks_skipped(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    make_task("b")
    make_task("a")
    make_task("no-tests", files={"tests/test.sh": None})
    (tmp_path / "dataset" / "notes").mkdir()
    (tmp_path / "dataset" / "README.md").write_text("x")
    assert _names(tmp_path / "dataset") == ["a", "b"]


def test_dataset_path_may_be_one_task(make_task: TaskFactory) -> None:
    task = make_task("solo")
    loaded = load_harbor_tasks(task, environ={})
    assert [spec.name for spec in loaded.tasks] == ["solo"]
    assert loaded.tasks[0].source == "dataset"


def test_missing_dataset_is_a_coded_error(tmp_path: Path) -> None:
    assert _fails(tmp_path / "nope").code == codes.DATASET_NOT_FOUND


def test_dataset_without_tasks_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert _fails(tmp_path / "empty").code == codes.NO_TASKS


def test_nothing_to_load_is_refused() -> None:
    assert _fails(None, {}).code == codes.NO_TASKS


def test_steps_are_refused_at_load(make_task: TaskFactory, tmp_path: Path) -> None:
    toml = BASE_TOML + '\n[[steps]]\nname = "one"\n'
    make_task("multi", toml=toml, files={"steps/one/instruction.md": "Step.\n"})
    error = _fails(tmp_path / "dataset")
    assert error.code == codes.MULTI_STEP
    assert error.field == "steps" and error.file is not None
    assert error.file.endswith("multi/task.toml")


def test_windows_tasks_are_refused(make_task: TaskFactory, tmp_path: Path) -> None:
    toml = BASE_TOML + 'os = "Windows"\n'
    make_task("win", toml=toml, files={"tests/test.bat": "echo 1\n"})
    assert _fails(tmp_path / "dataset").code == codes.WINDOWS


def test_select_picks_exact_names_and_rejects_unknown(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    for name in ("a", "b", "c"):
        make_task(name)
    dataset = tmp_path / "dataset"
    assert _names(dataset, overrides=RunOverrides(select=["c", "a"])) == ["c", "a"]
    error = _fails(dataset, overrides=RunOverrides(select=["a", "zz"]))
    assert error.code == codes.TASK_NOT_FOUND and "zz" in error.message


# --- job config sources ------------------------------------------------------------------


def test_job_datasets_filters_then_n_tasks(make_task: TaskFactory, tmp_path: Path) -> None:
    for name in ("alpha-1", "alpha-2", "alpha-3", "beta-1"):
        make_task(name)
    job = {
        "datasets": [
            {
                "path": str(tmp_path / "dataset"),
                "task_names": ["alpha-*", "beta-1"],
                "exclude_task_names": ["alpha-2"],
                "n_tasks": 2,
            }
        ]
    }
    assert _names(None, job) == ["alpha-1", "alpha-3"]


def test_job_dataset_filter_matching_nothing_is_refused(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    make_task("a")
    job = {"datasets": [{"path": str(tmp_path / "dataset"), "task_names": ["zz*"]}]}
    error = _fails(None, job)
    assert error.code == codes.NO_TASK_MATCHED and error.field == "datasets[0].task_names"


def test_dataset_path_and_job_sources_merge(make_task: TaskFactory, tmp_path: Path) -> None:
    make_task("a")
    other = make_task("b", root=tmp_path / "other")
    job = {"tasks": [{"path": str(other)}]}
    assert _names(tmp_path / "dataset", job) == ["a", "b"]


def test_duplicate_task_names_are_refused(make_task: TaskFactory, tmp_path: Path) -> None:
    make_task("same")
    other = make_task("same", root=tmp_path / "other")
    error = _fails(tmp_path / "dataset", {"tasks": [{"path": str(other)}]})
    assert error.code == codes.DUPLICATE_TASK and error.field == "tasks[0]"


def test_job_task_must_be_a_task(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    error = _fails(None, {"tasks": [{"path": str(tmp_path / "x")}]})
    assert error.code == codes.NOT_A_TASK and error.field == "tasks[0].path"


def test_relative_job_paths_resolve_against_base_dir(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    make_task("a")
    assert _names(None, {"datasets": [{"path": "dataset"}]}, base_dir=tmp_path) == ["a"]


# --- job config formats ------------------------------------------------------------------


def test_job_config_from_yaml_json_inline_and_dict(make_task: TaskFactory, tmp_path: Path) -> None:
    make_task("a")
    document = {"datasets": [{"path": str(tmp_path / "dataset")}]}
    yaml_file = tmp_path / "job.yaml"
    yaml_file.write_text(f"datasets:\n  - path: {tmp_path / 'dataset'}\n")
    json_file = tmp_path / "job.json"
    json_file.write_text(json.dumps(document))
    for job in (yaml_file, str(json_file), json.dumps(document), document):
        assert _names(None, job) == ["a"]


def test_unparsable_job_config_is_a_coded_error(tmp_path: Path) -> None:
    bad = tmp_path / "job.json"
    bad.write_text("{nope")
    error = _fails(None, bad)
    assert error.code == codes.JOB_CONFIG_INVALID and error.file == str(bad)


def test_invalid_job_field_names_the_field(make_task: TaskFactory, tmp_path: Path) -> None:
    make_task("a")
    error = _fails(tmp_path / "dataset", {"timeout_multiplier": "fast"})
    assert error.code == codes.JOB_CONFIG_INVALID and error.field == "timeout_multiplier"


# --- refusals ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("job", "code", "field"),
    [
        ({"n_attempts": 3}, codes.N_ATTEMPTS, "n_attempts"),
        ({"agents": [{"name": "a"}, {"name": "b"}]}, codes.MULTIPLE_AGENTS, "agents"),
        ({"install_only": True}, codes.INSTALL_ONLY, "install_only"),
        ({"datasets": [{"name": "terminal-bench"}]}, codes.REGISTRY_SOURCE, "datasets[0]"),
        (
            {"datasets": [{"name": "x", "registry_url": "https://r.example"}]},
            codes.REGISTRY_SOURCE,
            "datasets[0]",
        ),
        ({"datasets": [{"name": "org/bench"}]}, codes.PACKAGE_SOURCE, "datasets[0]"),
        ({"datasets": [{"repo": "org/repo", "path": "d"}]}, codes.GIT_SOURCE, "datasets[0]"),
        ({"tasks": [{"name": "org/task"}]}, codes.PACKAGE_SOURCE, "tasks[0]"),
        (
            {"tasks": [{"path": "t", "git_url": "https://g.example/r"}]},
            codes.GIT_SOURCE,
            "tasks[0]",
        ),
        ({"verifier": {"kwargs": {"a": 1}}}, codes.JOB_CONFIG_INVALID, "verifier.kwargs"),
    ],
)
def test_refusals_before_any_environment(
    make_task: TaskFactory, tmp_path: Path, job: dict[str, Any], code: str, field: str
) -> None:
    make_task("a")
    error = _fails(tmp_path / "dataset", job)
    assert (error.code, error.field) == (code, field)
    assert error.hint


def test_n_attempts_one_is_accepted(make_task: TaskFactory, tmp_path: Path) -> None:
    make_task("a")
    assert _names(tmp_path / "dataset", {"n_attempts": 1, "agents": [{}]}) == ["a"]


# --- reported fields ---------------------------------------------------------------------


def test_unapplied_fields_are_reported_and_loading_goes_on(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    make_task("a")
    job = {
        "job_name": "x",
        "n_concurrent_trials": 8,
        "retry": {"max_retries": 2},
        "agents": [{"name": "claude-code", "model_name": "m", "override_timeout_sec": 10}],
        "environment": {"type": "docker", "force_build": True, "override_cpus": 2},
        "verifier": {"include_logs": ["*.txt"], "disable": False},
        "datasets": [{"path": str(tmp_path / "dataset"), "overwrite": True, "download_dir": "d"}],
        "tasks": [],
    }
    loaded = load_harbor_tasks(None, job, environ={})
    fields = {warning.field for warning in loaded.warnings}
    assert fields == {
        "job_name",
        "n_concurrent_trials",
        "retry",
        "agents[0].name",
        "agents[0].model_name",
        "environment.type",
        "environment.force_build",
        "verifier.include_logs",
    }
    assert {warning.code for warning in loaded.warnings} == {codes.FIELD_UNAPPLIED}
    assert [spec.name for spec in loaded.tasks] == ["a"]


def test_unknown_and_unapplied_task_fields_are_reported(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    toml = BASE_TOML + 'network_mode = "no-network"\nfancy = 1\n\n[verifier]\nmystery = true\n'
    make_task("a", toml=toml + "\n[colour]\nx = 1\n", files={"tests/.harborignore": "*.bak\n"})
    loaded = load_harbor_tasks(tmp_path / "dataset", environ={})
    found = {(warning.code, warning.field) for warning in loaded.warnings}
    assert (codes.TASK_FIELD_UNKNOWN, "environment.fancy") in found
    assert (codes.TASK_FIELD_UNKNOWN, "verifier.mystery") in found
    assert (codes.TASK_FIELD_UNKNOWN, "colour") in found
    assert (codes.TASK_FIELD_UNAPPLIED, "environment.network_mode") in found
    assert (codes.HARBORIGNORE_UNAPPLIED, None) in found


# --- layering ----------------------------------------------------------------------------

LAYER_TOML = """\
[agent]
timeout_sec = 100.0

[verifier]
timeout_sec = 50.0
env = { A = "task", B = "task", C = "task" }

[environment]
docker_image = "img:task"
cpus = 1
memory_mb = 1000
storage_mb = 5000
gpus = 0
env = { X = "task", Y = "task", Z = "task" }
"""


def test_run_overrides_beat_job_config_beat_task_toml(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    make_task("a", toml=LAYER_TOML)
    job = {
        "environment": {
            "override_cpus": 2,
            "override_memory_mb": 2000,
            "env": {"Y": "job", "Z": "job"},
        },
        "verifier": {"env": {"B": "job", "C": "job"}},
        "agents": [{"env": {"K": "job", "L": "job"}}],
    }
    run = RunOverrides(
        image="img:run",
        cpus=4,
        environment_env={"Z": "run"},
        evaluation_env_variables={"C": "run"},
        agent_env={"L": "run"},
    )
    spec = load_harbor_tasks(tmp_path / "dataset", job, overrides=run, environ={}).tasks[0]
    assert spec.image == "img:run" and spec.dockerfile is None
    assert spec.resources.model_dump() == {
        "cpus": 4,
        "memory_mb": 2000,
        "storage_mb": 5000,
        "gpus": 0,
    }
    assert spec.environment_env == {"X": "task", "Y": "job", "Z": "run"}
    assert spec.verifier.env == {"A": "task", "B": "job", "C": "run"}
    assert spec.agent_env == {"K": "job", "L": "run"}


@pytest.mark.parametrize(
    ("job", "run", "agent", "verifier"),
    [
        ({}, {}, 100.0, 50.0),
        ({"timeout_multiplier": 2}, {}, 200.0, 100.0),
        ({"timeout_multiplier": 2, "agent_timeout_multiplier": 3}, {}, 300.0, 100.0),
        ({"verifier_timeout_multiplier": 0.5}, {}, 100.0, 25.0),
        ({"agents": [{"override_timeout_sec": 30}]}, {}, 30.0, 50.0),
        ({"agents": [{"max_timeout_sec": 40}], "timeout_multiplier": 2}, {}, 80.0, 100.0),
        ({"agents": [{"override_timeout_sec": 0}]}, {}, 100.0, 50.0),
        ({"verifier": {"override_timeout_sec": 10, "max_timeout_sec": 5}}, {}, 100.0, 5.0),
        ({"agents": [{"override_timeout_sec": 30}]}, {"agent_timeout_sec": 20}, 20.0, 50.0),
        ({}, {"verifier_timeout_sec": 7}, 100.0, 7.0),
    ],
)
def test_effective_timeouts_as_harbor_computes_them(
    make_task: TaskFactory,
    tmp_path: Path,
    job: dict[str, Any],
    run: dict[str, Any],
    agent: float,
    verifier: float,
) -> None:
    make_task("a", toml=LAYER_TOML)
    loaded = load_harbor_tasks(tmp_path / "dataset", job, overrides=RunOverrides(**run), environ={})
    spec = loaded.tasks[0]
    assert (spec.agent_timeout_sec, spec.verifier.timeout_sec) == (agent, verifier)


def test_no_task_agent_timeout_means_none(make_task: TaskFactory, tmp_path: Path) -> None:
    make_task("a", toml='[environment]\ndocker_image = "i"\n')
    job = {"timeout_multiplier": 3, "agents": [{"max_timeout_sec": 10}]}
    spec = load_harbor_tasks(tmp_path / "dataset", job, environ={}).tasks[0]
    assert spec.agent_timeout_sec is None
    assert spec.build_timeout_sec == 1800.0


# --- env templates ------------------------------------------------------------------------

TEMPLATE_TOML = """\
[environment]
docker_image = "i"

[environment.env]
PLAIN = "x"
HOSTED = "${HOST_VALUE}"
DEFAULTED = "${ABSENT:-fallback}"
EMPTY = "${SET_EMPTY:-no}"
INNER = "a-${HOST_VALUE}"
"""


def test_templates_resolve_from_the_host(make_task: TaskFactory, tmp_path: Path) -> None:
    make_task("a", toml=TEMPLATE_TOML)
    environ = {"HOST_VALUE": "from-host", "SET_EMPTY": ""}
    spec = load_harbor_tasks(tmp_path / "dataset", environ=environ).tasks[0]
    assert spec.failure is None
    assert spec.environment_env == {
        "PLAIN": "x",
        "HOSTED": "from-host",
        "DEFAULTED": "fallback",
        "EMPTY": "",
        "INNER": "a-${HOST_VALUE}",
    }


def test_missing_variable_fails_that_task_only(make_task: TaskFactory, tmp_path: Path) -> None:
    make_task("a", toml=TEMPLATE_TOML)
    make_task("b")
    tasks = load_harbor_tasks(tmp_path / "dataset", environ={}).tasks
    failure = tasks[0].failure
    assert failure is not None and failure.code == codes.ENV_UNRESOLVED
    assert failure.field == "environment.env.HOSTED" and "HOST_VALUE" in (failure.hint or "")
    assert tasks[1].failure is None


def test_a_template_overridden_by_a_higher_layer_needs_no_variable(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    toml = '[environment]\ndocker_image = "i"\n\n[verifier]\nenv = { KEY = "${JUDGE_KEY}" }\n'
    make_task("a", toml=toml)
    run = RunOverrides(evaluation_env_variables={"KEY": "literal"})
    spec = load_harbor_tasks(tmp_path / "dataset", overrides=run, environ={}).tasks[0]
    assert spec.failure is None and spec.verifier.env == {"KEY": "literal"}


# --- image and workdir --------------------------------------------------------------------

DOCKERFILE = """\
# syntax=docker/dockerfile:1
FROM ageval/base:bookworm AS build
WORKDIR /src
FROM ageval/base:bookworm
WORKDIR /opt
RUN mkdir -p /opt/app \\
    && true
WORKDIR app
WORKDIR $HOME/ignored
"""


def test_workdir_from_the_last_literal_dockerfile_workdir(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    make_task(
        "a", toml="[agent]\ntimeout_sec = 1.0\n", files={"environment/Dockerfile": DOCKERFILE}
    )
    spec = load_harbor_tasks(tmp_path / "dataset", environ={}).tasks[0]
    assert spec.image is None and spec.dockerfile is not None
    assert (spec.workdir, spec.workdir_source) == ("/opt/app", "dockerfile")


def test_environment_workdir_beats_the_dockerfile(make_task: TaskFactory, tmp_path: Path) -> None:
    toml = '[environment]\nworkdir = "/w"\n'
    make_task("a", toml=toml, files={"environment/Dockerfile": DOCKERFILE})
    spec = load_harbor_tasks(tmp_path / "dataset", environ={}).tasks[0]
    assert (spec.workdir, spec.workdir_source) == ("/w", "task")


def test_image_override_drops_the_dockerfile_workdir(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    make_task("a", toml="", files={"environment/Dockerfile": DOCKERFILE})
    run = RunOverrides(image="other:1")
    spec = load_harbor_tasks(tmp_path / "dataset", overrides=run, environ={}).tasks[0]
    assert (spec.image, spec.workdir, spec.dockerfile) == ("other:1", None, None)


def test_task_without_image_or_dockerfile_is_refused(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    make_task("a", toml="", files={"environment/docker-compose.yaml": "services: {}\n"})
    assert _fails(tmp_path / "dataset").code == codes.NO_IMAGE


def test_prebuilt_image_with_loose_environment_files_uploads_them(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    make_task("a", files={"environment/data.txt": "x"})
    make_task("b", files={"environment/Dockerfile": "FROM x\n"})
    tasks = load_harbor_tasks(tmp_path / "dataset", environ={}).tasks
    assert [spec.upload_environment_dir for spec in tasks] == [True, False]


# --- verifier, healthcheck, artifacts, instruction ----------------------------------------


def test_verifier_disable_loads_tasks_without_tests(make_task: TaskFactory, tmp_path: Path) -> None:
    make_task("a", files={"tests/test.sh": None})
    loaded = load_harbor_tasks(tmp_path / "dataset", {"verifier": {"disable": True}}, environ={})
    assert loaded.verification_disabled and loaded.tasks[0].verifier.disabled


def test_separate_verifier_environment(make_task: TaskFactory, tmp_path: Path) -> None:
    toml = BASE_TOML + '\n[verifier.environment]\ndocker_image = "grader:1"\n'
    make_task("a", toml=toml)
    make_task("b", toml=BASE_TOML + '\n[verifier]\nenvironment_mode = "separate"\n')
    first, second = load_harbor_tasks(tmp_path / "dataset", environ={}).tasks
    assert first.verifier.mode == "separate" and first.verifier.separate is not None
    assert first.verifier.separate.image == "grader:1" and first.verifier.separate.bundled_tests
    assert second.verifier.separate is not None
    assert second.verifier.separate.image == "ageval/base:bookworm"
    assert not second.verifier.separate.bundled_tests


def test_shared_mode_with_a_verifier_environment_is_invalid(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    toml = (
        BASE_TOML + '\n[verifier]\nenvironment_mode = "shared"\n[verifier.environment]\ncpus = 1\n'
    )
    make_task("a", toml=toml)
    error = _fails(tmp_path / "dataset")  # Harbor: not a task; the only one, so the error
    assert error.code == codes.TASK_INVALID
    assert "incompatible" in error.message and error.file == str(tmp_path / "dataset/a/task.toml")


def test_healthcheck_artifacts_and_instruction_with_users_reported_unapplied(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    toml = BASE_TOML.replace("[agent]\n", '[agent]\nuser = "agent"\n') + (
        '\n[environment.healthcheck]\ncommand = "true"\nretries = 5\n'
        '\n[verifier]\nuser = 1000\n\n[[artifacts]]\nsource = "/out"\n'
    )
    instruction = "<!-- canary GUID 123 -->\n# canary line\n\nDo it.\n"
    make_task("a", toml=toml, files={"instruction.md": instruction})
    extra = tmp_path / "extra.md"
    extra.write_text("Be brief.")
    job = {
        "artifacts": ["/logs/more"],
        "extra_instruction_paths": [str(extra)],
        "extra_instructions": ["Inline."],
    }
    loaded = load_harbor_tasks(tmp_path / "dataset", job, environ={})
    spec = loaded.tasks[0]
    unapplied = {w.field for w in loaded.warnings if w.code == codes.TASK_FIELD_UNAPPLIED}
    assert {"agent.user", "verifier.user"} <= unapplied
    assert spec.healthcheck is not None and spec.healthcheck.retries == 5
    assert [artifact.source for artifact in spec.artifacts] == ["/out", "/logs/more"]
    assert spec.instruction == "Do it.\n\n\nBe brief.\n\nInline."


def test_legacy_fields_migrate(make_task: TaskFactory, tmp_path: Path) -> None:
    toml = 'version = "1.0"\n[environment]\ndocker_image = "i"\nmemory = "2G"\nstorage = "512M"\n'
    make_task("a", toml=toml)
    loaded = load_harbor_tasks(tmp_path / "dataset", environ={})
    assert loaded.tasks[0].resources.memory_mb == 2048
    assert loaded.tasks[0].resources.storage_mb == 512
    assert loaded.warnings == []
