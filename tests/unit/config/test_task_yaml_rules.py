"""The rules of a member task's task.yaml and its directory, each checked on both sides."""

from __future__ import annotations

import os

import pytest

import agevalx

pytestmark = pytest.mark.unit

TASK = "tasks/demo-task"


def task_file(ds):
    return f"{ds}/{TASK}/task.yaml"


def test_baseline_task_locks_with_its_files(make_dataset, lock_document):
    lock = lock_document(make_dataset())

    assert lock["task_id"] == "demo-task"
    assert sorted(lock["files"]) == [
        "environment/Dockerfile",
        "evaluator.py",
        "prompts/task.md",
        "run.py",
        "task.yaml",
    ]
    assert lock["features"] == {
        "run_py": True,
        "evaluator_py": True,
        "dockerfile": True,
        "setup_sh": False,
        "compose": False,
        "solution": False,
    }


# format and task_id


@pytest.mark.parametrize(
    "override",
    [{"format": None}, {"format": "ageval.task/2"}, {"format": "ageval.dataset/1"}],
    ids=["null", "version-2", "dataset-format"],
)
def test_task_format_other_than_task_1_is_invalid_format(make_dataset, lock_fails, override):
    ds = make_dataset(task=override)

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == ("invalid_format", task_file(ds), "format")


def test_missing_task_format_is_invalid_format(make_dataset, lock_fails):
    ds = make_dataset(task={"format": make_dataset.DELETE})

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == ("invalid_format", task_file(ds), "format")


@pytest.mark.parametrize("task_id", ["other-task", "Demo-Task", "demo-task ", "tasks/demo-task"])
def test_task_id_different_from_its_directory_is_task_id_mismatch(
    make_dataset, lock_fails, task_id
):
    ds = make_dataset(task={"task_id": task_id})

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == ("task_id_mismatch", task_file(ds), "task_id")


def test_missing_task_id_is_a_missing_field(make_dataset, lock_fails):
    ds = make_dataset(task={"task_id": make_dataset.DELETE})

    error = lock_fails(ds)

    assert (error.code, error.field) == ("missing_field", "task_id")


def test_task_option_naming_a_missing_task_is_task_not_found(make_dataset, lock_fails):
    ds = make_dataset()

    error = lock_fails(ds, tasks=["no-such-task"])

    assert (error.code, error.file, error.field) == ("task_not_found", f"{ds}/tasks", "--task")
    assert "demo-task" in error.hint


@pytest.mark.parametrize("name", ["../demo-task", ".", "", "demo-task/"])
def test_task_option_that_is_not_a_task_directory_name_is_task_not_found(
    make_dataset, lock_fails, name
):
    error = lock_fails(make_dataset(), tasks=[name])

    assert error.code == "task_not_found"


def test_task_option_locks_only_the_named_task(make_dataset, cache_dir):
    ds = make_dataset(tasks={"alpha": None, "beta": None})

    outcomes = agevalx.lock(ds, tasks=["beta"])

    assert [outcome.lock.task_id for outcome in outcomes] == ["beta"]
    assert sorted(path.name for path in (ds / ".ageval" / "locks").iterdir()) == ["beta.lock.json"]


def test_every_task_is_locked_when_none_is_named(make_dataset, cache_dir):
    ds = make_dataset(tasks={"alpha": None, "beta": None})

    outcomes = agevalx.lock(ds)

    assert [outcome.lock.task_id for outcome in outcomes] == ["alpha", "beta"]


def test_a_broken_task_fails_the_whole_lock_and_writes_nothing(make_dataset, lock_fails):
    ds = make_dataset(tasks={"alpha": None, "beta": {"format": "nope"}})

    error = lock_fails(ds)

    assert (error.code, error.file) == ("invalid_format", f"{ds}/tasks/beta/task.yaml")
    assert not (ds / ".ageval" / "locks").exists()


# limits


def test_limits_default_to_300_600_600_unlimited_and_one(make_dataset, lock_document):
    lock = lock_document(make_dataset())

    assert lock["task"]["limits"] == {
        "wall_time_seconds": 300,
        "environment_seconds": 600,
        "evaluate_seconds": 600,
        "agent_concurrency": 1,
    }


def test_limits_written_in_task_yaml_are_locked(make_dataset, lock_document):
    limits = {
        "wall_time_seconds": 1,
        "environment_seconds": 7200,
        "evaluate_seconds": 30,
        "agent_invocations": 3,
        "agent_concurrency": 4,
    }

    lock = lock_document(make_dataset(task={"limits": limits}))

    assert lock["task"]["limits"] == limits


@pytest.mark.parametrize(
    "key",
    [
        "wall_time_seconds",
        "environment_seconds",
        "evaluate_seconds",
        "agent_invocations",
        "agent_concurrency",
    ],
)
@pytest.mark.parametrize(
    "value", [0, -5, 1.5, "60", True], ids=["zero", "negative", "float", "str", "bool"]
)
def test_limit_that_is_not_a_positive_int_is_refused(make_dataset, lock_fails, key, value):
    ds = make_dataset(task={"limits": {key: value}})

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "invalid_value",
        task_file(ds),
        f"limits.{key}",
    )


def test_unknown_limit_is_unknown_field(make_dataset, lock_fails):
    error = lock_fails(make_dataset(task={"limits": {"tokens": 10}}))

    assert (error.code, error.field) == ("unknown_field", "limits.tokens")


# artifacts.publishable


def test_publishable_artifact_with_id_path_and_producer_is_locked(make_dataset, lock_document):
    artifact = {"id": "report", "path": "out/report.txt", "producer": "solver"}

    lock = lock_document(make_dataset(task={"artifacts": {"publishable": [artifact]}}))

    assert lock["task"]["artifacts"] == {"publishable": [artifact]}


@pytest.mark.parametrize("key", ["id", "path", "producer"])
def test_publishable_artifact_missing_a_key_is_refused(make_dataset, lock_fails, key):
    artifact = {"id": "report", "path": "report.txt", "producer": "solver"}
    del artifact[key]
    ds = make_dataset(task={"artifacts": {"publishable": [artifact]}})

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "missing_field",
        task_file(ds),
        f"artifacts.publishable[0].{key}",
    )


@pytest.mark.parametrize("path", ["/attempt/workspace/report.txt", "../report.txt", "a/../../b"])
def test_publishable_artifact_path_leaving_the_workspace_is_refused(make_dataset, lock_fails, path):
    artifact = {"id": "report", "path": path, "producer": "solver"}

    error = lock_fails(make_dataset(task={"artifacts": {"publishable": [artifact]}}))

    assert (error.code, error.field) == ("invalid_path", "artifacts.publishable[0].path")


@pytest.mark.parametrize("key", ["id", "producer"])
def test_publishable_artifact_with_empty_id_or_producer_is_refused(make_dataset, lock_fails, key):
    artifact = {"id": "report", "path": "report.txt", "producer": "solver", key: ""}

    error = lock_fails(make_dataset(task={"artifacts": {"publishable": [artifact]}}))

    assert (error.code, error.field) == ("invalid_value", f"artifacts.publishable[0].{key}")


def test_publishable_artifacts_with_the_same_id_are_refused(make_dataset, lock_fails):
    artifact = {"id": "report", "path": "report.txt", "producer": "solver"}

    error = lock_fails(make_dataset(task={"artifacts": {"publishable": [artifact, artifact]}}))

    assert (error.code, error.field) == ("invalid_value", "artifacts.publishable")


# evaluation


def test_evaluation_defaults_tmpfs_to_32_and_collects_nothing(make_dataset, lock_document):
    lock = lock_document(make_dataset())

    assert lock["task"]["evaluation"] == {"tmpfs_mb": 32, "environments": {}, "collect": []}


def test_evaluation_inputs_output_and_tmpfs_are_locked(make_dataset, lock_document):
    evaluation = {"inputs": ["out.json"], "output": "evaluation.json", "tmpfs_mb": 256}

    lock = lock_document(make_dataset(task={"evaluation": evaluation}))

    assert lock["task"]["evaluation"] == {**evaluation, "environments": {}, "collect": []}


@pytest.mark.parametrize(
    "value", [0, -32, 1.5, "32", None], ids=["zero", "neg", "float", "str", "null"]
)
def test_evaluation_tmpfs_that_is_not_a_positive_int_is_refused(make_dataset, lock_fails, value):
    ds = make_dataset(task={"evaluation": {"tmpfs_mb": value}})

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "invalid_value",
        task_file(ds),
        "evaluation.tmpfs_mb",
    )


def test_tmpfs_is_not_a_limit(make_dataset, lock_fails):
    error = lock_fails(make_dataset(task={"limits": {"tmpfs_mb": 64}}))

    assert (error.code, error.field) == ("unknown_field", "limits.tmpfs_mb")


SCORING_HOSTS = {
    "grader": {"docker_image": "python:3.12-slim"},
    "gpu": {"dockerfile": "evaluation/Dockerfile"},
}


def test_evaluation_environments_without_an_isolated_host_are_refused(make_dataset, lock_fails):
    ds = make_dataset(task={"evaluation": {"environments": SCORING_HOSTS}})

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "evaluation_environments_need_isolated_host",
        task_file(ds),
        "evaluation.environments",
    )


def test_evaluation_environments_with_an_explicitly_shared_host_are_refused(
    make_dataset, lock_fails
):
    ds = make_dataset(
        task={"evaluation": {"environments": SCORING_HOSTS}},
        profiles={"evaluate_host": {"isolated": False}},
    )

    assert lock_fails(ds).code == "evaluation_environments_need_isolated_host"


def test_evaluation_environments_with_an_isolated_host_are_locked(make_dataset, lock_document):
    ds = make_dataset(
        task={"evaluation": {"environments": SCORING_HOSTS}},
        profiles={"evaluate_host": {"isolated": True}},
    )

    lock = lock_document(ds)

    assert lock["task"]["evaluation"]["environments"] == SCORING_HOSTS
    assert lock["binding"]["evaluate_host"]["isolated"] is True


def test_evaluation_environment_without_dockerfile_or_image_is_refused(make_dataset, lock_fails):
    ds = make_dataset(
        task={"evaluation": {"environments": {"grader": {}}}},
        profiles={"evaluate_host": {"isolated": True}},
    )

    error = lock_fails(ds)

    assert (error.code, error.field) == ("invalid_value", "evaluation.environments.grader")


def test_evaluation_environment_dockerfile_leaving_the_task_is_refused(make_dataset, lock_fails):
    ds = make_dataset(
        task={"evaluation": {"environments": {"grader": {"dockerfile": "../Dockerfile"}}}},
        profiles={"evaluate_host": {"isolated": True}},
    )

    error = lock_fails(ds)

    assert (error.code, error.field) == (
        "invalid_path",
        "evaluation.environments.grader.dockerfile",
    )


def test_evaluation_collect_entries_with_absolute_paths_are_locked(make_dataset, lock_document):
    collect = [
        {"path": "/attempt/workspace/out.json"},
        {
            "path": "/var/lib/db/dump.sql",
            "command": "pg_dump > /var/lib/db/dump.sql",
            "service": "db",
            "timeout_sec": 30,
        },
    ]

    lock = lock_document(make_dataset(task={"evaluation": {"collect": collect}}))

    assert lock["task"]["evaluation"]["collect"] == collect


@pytest.mark.parametrize(
    "path",
    ["out.json", "attempt/out.json", "/attempt/../etc/passwd", ""],
    ids=["relative", "relative-dir", "dot-dot", "empty"],
)
def test_evaluation_collect_path_that_is_not_absolute_is_refused(make_dataset, lock_fails, path):
    ds = make_dataset(task={"evaluation": {"collect": [{"path": path}]}})

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "invalid_path",
        task_file(ds),
        "evaluation.collect[0].path",
    )


@pytest.mark.parametrize(
    ("entry", "field", "code"),
    [
        ({}, "evaluation.collect[0].path", "missing_field"),
        ({"path": "/a", "timeout_sec": 0}, "evaluation.collect[0].timeout_sec", "invalid_value"),
        ({"path": "/a", "retries": 2}, "evaluation.collect[0].retries", "unknown_field"),
    ],
    ids=["no-path", "zero-timeout", "unknown-key"],
)
def test_malformed_evaluation_collect_entry_is_refused(
    make_dataset, lock_fails, entry, field, code
):
    error = lock_fails(make_dataset(task={"evaluation": {"collect": [entry]}}))

    assert (error.code, error.field) == (code, field)


# top-level directories of a task


@pytest.mark.parametrize(
    "directory",
    ["prompts", "schemas", "environment", "evaluation", "data", "lib", "upstream", "solution"],
)
def test_whitelisted_top_level_directory_is_accepted(make_dataset, lock_document, directory):
    ds = make_dataset(task_files={f"{directory}/notes.txt": "x\n"})

    lock = lock_document(ds)

    assert f"{directory}/notes.txt" in lock["files"]


@pytest.mark.parametrize("directory", ["tests", "src", "scripts", "Data", "node_modules"])
def test_top_level_directory_outside_the_whitelist_is_refused(make_dataset, lock_fails, directory):
    ds = make_dataset(task_files={f"{directory}/file.py": "x = 1\n"})

    error = lock_fails(ds)

    assert (error.code, error.file) == ("illegal_top_level_dir", f"{ds}/{TASK}/{directory}")
    assert "prompts" in error.hint


def test_empty_top_level_directory_outside_the_whitelist_is_refused(
    make_dataset, lock_fails, private_cache
):
    ds = make_dataset()
    (ds / TASK / "tests").mkdir()

    assert lock_fails(ds).code == "illegal_top_level_dir"


def test_non_whitelisted_directory_below_the_top_level_is_accepted(make_dataset, lock_document):
    ds = make_dataset(task_files={"data/tests/case.txt": "1\n", "lib/src/x.py": "x = 1\n"})

    lock = lock_document(ds)

    assert {"data/tests/case.txt", "lib/src/x.py"} <= set(lock["files"])


def test_top_level_file_named_like_a_forbidden_directory_is_accepted(make_dataset, lock_document):
    lock = lock_document(make_dataset(task_files={"tests": "not a directory\n"}))

    assert "tests" in lock["files"]


# forbidden keys


@pytest.mark.parametrize(
    ("key", "value"),
    [("harness", {"kind": "terminal"}), ("provider", {"kind": "openai"}), ("assurance", "high")],
)
def test_forbidden_task_key_is_refused(make_dataset, lock_fails, key, value):
    ds = make_dataset(task={key: value})

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == ("forbidden_task_key", task_file(ds), key)
    assert error.hint


@pytest.mark.parametrize("key", ["n_attempts", "k"])
def test_attempt_count_in_task_yaml_is_cli_only(make_dataset, lock_fails, key):
    error = lock_fails(make_dataset(task={key: 3}))

    assert (error.code, error.field) == ("always_k_cli_only", key)


def test_unknown_task_key_is_unknown_field(make_dataset, lock_fails):
    ds = make_dataset(task={"timeout": 10})

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == ("unknown_field", task_file(ds), "timeout")


@pytest.mark.parametrize(
    "role",
    [
        {"id": "solver", "executor": "acp"},
        {"id": "solver", "api_key": "${ZHIPU_API_KEY}"},
        {"id": "solver", "model": {"id": "gpt-5.4"}},
        {"id": "solver", "options": {"entry": "pi"}},
    ],
    ids=["executor", "api_key", "model", "options"],
)
def test_role_binding_fields_in_a_task_are_forbidden(make_dataset, lock_fails, role):
    ds = make_dataset(task={"agent_profiles": [role]})

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "forbidden_role_field",
        task_file(ds),
        "agent_profiles[0]",
    )


def test_role_with_only_an_id_is_accepted(make_dataset, lock_document):
    lock = lock_document(make_dataset(task={"agent_profiles": [{"id": "solver"}]}))

    assert lock["task"]["agent_profiles"] == [{"id": "solver"}]
    assert list(lock["binding"]["roles"]) == ["solver"]


def test_duplicate_role_ids_are_refused(make_dataset, lock_fails):
    error = lock_fails(make_dataset(task={"agent_profiles": [{"id": "solver"}, {"id": "solver"}]}))

    assert (error.code, error.field) == ("invalid_value", "agent_profiles")


# parameters


def test_parameters_are_locked_for_run_py(make_dataset, lock_document):
    parameters = {
        "input": "data/in.txt",
        "top": 5,
        "ratio": 0.5,
        "flags": ["a", "b"],
        "nested": {"x": 1},
    }

    lock = lock_document(make_dataset(task={"parameters": parameters}))

    assert lock["task"]["parameters"] == parameters


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("cpus", 2),
        ("cpus", 0.5),
        ("memory_mb", 512),
        ("gpus", 0),
        ("gpus", 2),
        ("gpu_types", ["a100", "h100"]),
        ("verifier_gpus", 1),
        ("network_mode", "service:db"),
    ],
)
def test_typed_container_parameter_is_accepted(make_dataset, lock_document, key, value):
    lock = lock_document(make_dataset(task={"parameters": {key: value}}))

    assert lock["task"]["parameters"][key] == value


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("cpus", 0),
        ("cpus", -1),
        ("cpus", "two"),
        ("cpus", [1]),
        ("memory_mb", 0),
        ("memory_mb", 1.5),
        ("memory_mb", "512"),
        ("gpus", -1),
        ("gpus", "1"),
        ("gpus", 1.0),
        ("gpu_types", "a100"),
        ("gpu_types", [1]),
        ("verifier_gpus", -1),
        ("network_mode", "host"),
        ("network_mode", "service:"),
        ("network_mode", 5),
    ],
)
def test_badly_typed_container_parameter_is_refused(make_dataset, lock_fails, key, value):
    ds = make_dataset(task={"parameters": {key: value}})

    error = lock_fails(ds)

    assert error.code == "invalid_value"
    assert error.file == task_file(ds)
    assert error.field is not None and error.field.startswith(f"parameters.{key}")


def test_main_environment_and_cap_add_never_reach_the_lock(make_dataset, cache_dir):
    ds = make_dataset(
        task={
            "parameters": {
                "main_environment": {"TASK_ENV_MARKER": "task-env-value-1234"},
                "cap_add": ["NET_ADMIN"],
                "kept": 1,
            }
        },
        profiles={
            "environment_options": {
                "main_environment": {"PROFILE_ENV_MARKER": "profile-env-value-5678"},
                "cap_add": ["SYS_PTRACE"],
            }
        },
    )

    written = agevalx.lock(ds)[0].path.read_bytes()

    for text in (
        b"main_environment",
        b"cap_add",
        b"TASK_ENV_MARKER",
        b"task-env-value-1234",
        b"PROFILE_ENV_MARKER",
        b"profile-env-value-5678",
        b"NET_ADMIN",
        b"SYS_PTRACE",
    ):
        assert text not in written
    assert b'"kept":1' in written


@pytest.mark.parametrize(
    ("key", "value"),
    [("main_environment", ["A=1"]), ("main_environment", {"A": 1}), ("cap_add", "NET_ADMIN")],
)
def test_badly_typed_main_environment_or_cap_add_is_refused(make_dataset, lock_fails, key, value):
    error = lock_fails(make_dataset(task={"parameters": {key: value}}))

    assert error.code == "invalid_value"
    assert error.field.startswith(f"parameters.{key}")


# files of the task directory


def test_task_without_dockerfile_is_missing_dockerfile(make_dataset, lock_fails):
    ds = make_dataset(task_files={"environment/Dockerfile": None})

    error = lock_fails(ds)

    assert (error.code, error.file) == ("missing_dockerfile", f"{ds}/{TASK}/environment/Dockerfile")


def test_task_without_dockerfile_locks_when_profiles_name_an_image(make_dataset, lock_document):
    ds = make_dataset(
        task_files={"environment/Dockerfile": None},
        profiles={"environment_options": {"image": "python:3.12-slim"}},
    )

    lock = lock_document(ds)

    assert lock["features"]["dockerfile"] is False
    assert lock["binding"]["environment_options"]["image"] == "python:3.12-slim"


def test_task_without_evaluator_is_missing_evaluator(make_dataset, lock_fails):
    ds = make_dataset(task_files={"evaluator.py": None})

    error = lock_fails(ds)

    assert (error.code, error.file) == ("missing_evaluator", f"{ds}/{TASK}/evaluator.py")


def test_task_without_task_yaml_is_missing_file(make_dataset, lock_fails):
    ds = make_dataset(task=make_dataset.NO_FILE)

    error = lock_fails(ds)

    assert (error.code, error.file) == ("missing_file", task_file(ds))


@pytest.mark.parametrize(
    "target",
    ["../../../ageval.yaml", "/etc/passwd", "../../other-task/evaluator.py"],
    ids=["relative-up", "absolute", "sibling"],
)
def test_symlink_leaving_the_task_is_path_escape(make_dataset, lock_fails, target):
    ds = make_dataset(task_files={"data/keep.txt": "x\n"})
    os.symlink(target, ds / TASK / "data" / "link")

    error = lock_fails(ds)

    assert (error.code, error.file) == ("path_escape", f"{ds}/{TASK}/data/link")


def test_symlinked_directory_leaving_the_task_is_path_escape(make_dataset, lock_fails, tmp_path):
    ds = make_dataset()
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", ds / TASK / "data")

    assert lock_fails(ds).code == "path_escape"


def test_symlink_inside_the_task_is_locked_as_a_link(make_dataset, lock_document):
    ds = make_dataset(task_files={"data/real.txt": "x\n"})
    os.symlink("real.txt", ds / TASK / "data" / "alias.txt")

    lock = lock_document(ds)

    assert lock["files"]["data/alias.txt"]["symlink"] == "real.txt"


def test_executable_bit_of_a_task_file_is_locked(make_dataset, lock_document):
    ds = make_dataset(task_files={"solution/solve.sh": "#!/bin/sh\n"})
    os.chmod(ds / TASK / "solution" / "solve.sh", 0o755)

    lock = lock_document(ds)

    assert lock["files"]["solution/solve.sh"]["executable"] is True
    assert lock["files"]["run.py"]["executable"] is False


def test_fifo_in_a_task_is_unsupported_file_type(make_dataset, lock_fails, private_cache):
    ds = make_dataset()
    os.mkfifo(ds / TASK / "pipe")

    assert lock_fails(ds).code == "unsupported_file_type"


# without run.py the task runs its single profile


def test_task_without_run_py_and_with_one_role_locks(make_dataset, lock_document):
    lock = lock_document(make_dataset(task_files={"run.py": None}))

    assert lock["features"]["run_py"] is False


def test_task_without_run_py_and_two_roles_is_refused(make_dataset, lock_fails):
    ds = make_dataset(
        task={"agent_profiles": [{"id": "solver"}, {"id": "reviewer"}]},
        task_files={"run.py": None},
        profiles={"agent_profiles": {"reviewer": {"executor": "acp", "options": {"entry": "pi"}}}},
    )

    error = lock_fails(ds)

    assert (error.code, error.field) == ("default_run_needs_one_profile", "agent_profiles")


def test_task_without_run_py_needs_a_prompt(make_dataset, lock_fails):
    ds = make_dataset(task_files={"run.py": None, "prompts/task.md": None})

    error = lock_fails(ds)

    assert (error.code, error.file) == ("missing_prompt", f"{ds}/{TASK}/prompts/task.md")


def test_oracle_without_run_py_needs_a_solution(make_dataset, lock_fails):
    ds = make_dataset(task_files={"run.py": None})

    error = lock_fails(ds, agent="oracle")

    assert (error.code, error.file) == ("missing_solution", f"{ds}/{TASK}/solution")


@pytest.mark.parametrize("value", [float("inf"), float("nan")], ids=["inf", "nan"])
def test_non_finite_cpus_is_refused(make_dataset, lock_fails, value):
    ds = make_dataset(task={"parameters": {"cpus": value}})

    error = lock_fails(ds)

    assert (error.code, error.field) == ("invalid_value", "parameters.cpus")


def test_an_evaluation_judge_must_be_one_of_the_tasks_roles(make_dataset, lock_fails):
    ds = make_dataset(task={"agent_profiles": [{"id": "solver"}], "evaluation": {"judge": "jury"}})

    error = lock_fails(ds)

    assert (error.code, error.file) == ("unknown_judge_role", task_file(ds))
    assert "jury" in error.message and error.hint
