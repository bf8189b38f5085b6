"""The rules of the dataset root file, ageval.yaml, each checked on both sides."""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.unit


def test_baseline_dataset_locks(make_dataset, lock_document):
    lock = lock_document(make_dataset())

    assert lock["dataset"] == {
        "dataset_id": "acme/demo",
        "version": "1",
        "tasks_root": "tasks",
        "max_concurrent_tasks": 1,
    }


# format


@pytest.mark.parametrize(
    "override",
    [
        {"format": None},
        {"format": "ageval.dataset/2"},
        {"format": "ageval.task/1"},
        {"format": "ageval.dataset/1 "},
        {"format": 1},
    ],
    ids=["null", "version-2", "task-format", "trailing-space", "int"],
)
def test_dataset_format_other_than_dataset_1_is_invalid_format(make_dataset, lock_fails, override):
    ds = make_dataset(override)

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "invalid_format",
        f"{ds}/ageval.yaml",
        "format",
    )


def test_missing_dataset_format_is_invalid_format(make_dataset, lock_fails):
    ds = make_dataset({"format": make_dataset.DELETE})

    error = lock_fails(ds)

    assert (error.code, error.field) == ("invalid_format", "format")


# dataset_id


@pytest.mark.parametrize(
    "dataset_id",
    [
        "a",
        "7",
        "org/name",
        "acme/terminal-tasks",
        "a.b_c-d/e0",
        "a/b/c",
        "a" * 128,
        "acme/" + "x" * 123,
    ],
    ids=[
        "one-char",
        "digit",
        "org-name",
        "dashes",
        "all-punctuation",
        "three-parts",
        "128",
        "128-org",
    ],
)
def test_valid_dataset_id_is_accepted(make_dataset, lock_document, dataset_id):
    lock = lock_document(make_dataset({"dataset_id": dataset_id}))

    assert lock["dataset"]["dataset_id"] == dataset_id


@pytest.mark.parametrize(
    "dataset_id",
    [
        "",
        "a" * 129,
        "acme/" + "x" * 124,
        "Acme/demo",
        "acme/Demo",
        "-acme",
        "acme-",
        ".acme",
        "acme.",
        "_acme",
        "/acme",
        "acme/",
        "acme..demo",
        "acme/../demo",
        "acme//demo",
        "acme/demo\n",
        "acme demo",
        "acme:demo",
        "acmé/demo",
        "acme\\demo",
    ],
    ids=[
        "empty",
        "129",
        "129-org",
        "uppercase-org",
        "uppercase-name",
        "leading-dash",
        "trailing-dash",
        "leading-dot",
        "trailing-dot",
        "leading-underscore",
        "leading-slash",
        "trailing-slash",
        "double-dot",
        "dot-dot-segment",
        "double-slash",
        "trailing-newline",
        "space",
        "colon",
        "non-ascii",
        "backslash",
    ],
)
def test_dataset_id_breaking_the_shape_is_invalid_dataset_id(make_dataset, lock_fails, dataset_id):
    ds = make_dataset({"dataset_id": dataset_id})

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "invalid_dataset_id",
        f"{ds}/ageval.yaml",
        "dataset_id",
    )
    assert error.hint


def test_dataset_id_with_double_dot_is_refused(make_dataset, lock_fails):
    error = lock_fails(make_dataset({"dataset_id": "acme/a..b"}))

    assert error.code == "invalid_dataset_id"
    assert "'..'" in error.message


def test_missing_dataset_id_is_a_missing_field(make_dataset, lock_fails):
    error = lock_fails(make_dataset({"dataset_id": make_dataset.DELETE}))

    assert (error.code, error.field) == ("missing_field", "dataset_id")


def test_dataset_id_that_is_not_a_string_is_refused(make_dataset, lock_fails):
    error = lock_fails(make_dataset({"dataset_id": 42}))

    assert (error.code, error.field) == ("invalid_value", "dataset_id")


# version


@pytest.mark.parametrize(
    ("version", "locked"),
    [("1.0", "1.0"), ("2024-01-01", "2024-01-01"), (3, "3"), (0, "0"), ("v", "v")],
)
def test_non_empty_version_is_accepted(make_dataset, lock_document, version, locked):
    lock = lock_document(make_dataset({"version": version}))

    assert lock["dataset"]["version"] == locked


@pytest.mark.parametrize(
    "version",
    ["", None, True, 1.5, [1], {"major": 1}],
    ids=["empty", "null", "bool", "float", "list", "mapping"],
)
def test_empty_or_non_text_version_is_refused(make_dataset, lock_fails, version):
    ds = make_dataset({"version": version})

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "invalid_value",
        f"{ds}/ageval.yaml",
        "version",
    )


def test_missing_version_is_a_missing_field(make_dataset, lock_fails):
    error = lock_fails(make_dataset({"version": make_dataset.DELETE}))

    assert (error.code, error.field) == ("missing_field", "version")


# tasks.root


def test_tasks_root_defaults_to_tasks(make_dataset, lock_document):
    lock = lock_document(make_dataset({"tasks": make_dataset.DELETE}))

    assert lock["dataset"]["tasks_root"] == "tasks"


def test_tasks_root_may_name_another_directory(make_dataset, lock_document):
    ds = make_dataset({"tasks": {"root": "suite/members"}})
    (ds / "suite").mkdir()
    (ds / "tasks").rename(ds / "suite" / "members")

    lock = lock_document(ds)

    assert lock["dataset"]["tasks_root"] == "suite/members"


@pytest.mark.parametrize(
    "root",
    ["../elsewhere", "/tmp", "tasks/../../x", "", "a\\b"],
    ids=["parent", "absolute", "climbs-out", "empty", "backslash"],
)
def test_tasks_root_escaping_the_dataset_is_refused(make_dataset, lock_fails, root):
    ds = make_dataset({"tasks": {"root": root}})

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "invalid_path",
        f"{ds}/ageval.yaml",
        "tasks.root",
    )


def test_tasks_root_symlinked_out_of_the_dataset_is_refused(make_dataset, lock_fails, tmp_path):
    ds = make_dataset({"tasks": {"root": "linked"}})
    (ds / "tasks").rename(tmp_path / "outside")
    os.symlink(tmp_path / "outside", ds / "linked")

    error = lock_fails(ds)

    assert (error.code, error.field) == ("path_escape", "tasks.root")


def test_unknown_key_under_tasks_is_unknown_field(make_dataset, lock_fails):
    error = lock_fails(make_dataset({"tasks": {"glob": "*"}}))

    assert (error.code, error.field) == ("unknown_field", "tasks.glob")


# defaults


def test_max_concurrent_tasks_defaults_to_one(make_dataset, lock_document):
    lock = lock_document(make_dataset())

    assert lock["dataset"]["max_concurrent_tasks"] == 1


@pytest.mark.parametrize("value", [1, 2, 64])
def test_max_concurrent_tasks_of_one_or_more_is_accepted(make_dataset, lock_document, value):
    lock = lock_document(make_dataset({"defaults": {"max_concurrent_tasks": value}}))

    assert lock["dataset"]["max_concurrent_tasks"] == value


@pytest.mark.parametrize(
    "value", [0, -1, 1.5, "2", True, None], ids=["zero", "negative", "float", "str", "bool", "null"]
)
def test_max_concurrent_tasks_below_one_or_not_an_int_is_refused(make_dataset, lock_fails, value):
    ds = make_dataset({"defaults": {"max_concurrent_tasks": value}})

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "invalid_value",
        f"{ds}/ageval.yaml",
        "defaults.max_concurrent_tasks",
    )


@pytest.mark.parametrize("key", ["wall_time_seconds", "n_attempts_default", "harness", "timeout"])
def test_unknown_key_under_defaults_is_unknown_field(make_dataset, lock_fails, key):
    error = lock_fails(make_dataset({"defaults": {key: 1}}))

    assert (error.code, error.field) == ("unknown_field", f"defaults.{key}")


# forbidden and unknown root keys


@pytest.mark.parametrize("key", ["harness", "provider", "limits", "evaluation", "agent_profiles"])
def test_forbidden_root_key_is_refused(make_dataset, lock_fails, key):
    ds = make_dataset({key: {"anything": 1}})

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "forbidden_root_key",
        f"{ds}/ageval.yaml",
        key,
    )
    assert error.hint


@pytest.mark.parametrize("key", ["n_attempts", "k"])
def test_attempt_count_in_ageval_yaml_is_cli_only(make_dataset, lock_fails, key):
    ds = make_dataset({key: 5})

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "always_k_cli_only",
        f"{ds}/ageval.yaml",
        key,
    )


@pytest.mark.parametrize("key", ["name", "description", "dataset", "task"])
def test_unknown_root_key_is_unknown_field(make_dataset, lock_fails, key):
    ds = make_dataset({key: "x"})

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == ("unknown_field", f"{ds}/ageval.yaml", key)


# tasks


def test_dataset_without_a_tasks_directory_has_no_tasks(make_dataset, lock_fails):
    ds = make_dataset(tasks={})

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "no_tasks",
        f"{ds}/ageval.yaml",
        "tasks.root",
    )


def test_dataset_whose_tasks_directory_holds_only_files_and_hidden_dirs_has_no_tasks(
    make_dataset, lock_fails
):
    ds = make_dataset(tasks={}, files={"tasks/README.md": "none yet\n"})
    (ds / "tasks" / ".cache").mkdir()
    (ds / "tasks" / "_template").mkdir()

    error = lock_fails(ds)

    assert error.code == "no_tasks"


def test_missing_dataset_directory_is_dataset_not_found(tmp_path, lock_fails):
    error = lock_fails(tmp_path / "nowhere")

    assert (error.code, error.file) == ("dataset_not_found", f"{tmp_path}/nowhere")


def test_dataset_without_ageval_yaml_is_missing_file(make_dataset, lock_fails):
    ds = make_dataset(make_dataset.NO_FILE)

    error = lock_fails(ds)

    assert (error.code, error.file) == ("missing_file", f"{ds}/ageval.yaml")
