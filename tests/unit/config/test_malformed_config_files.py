"""Malformed config files give a coded error, never a traceback or an internal error."""

from __future__ import annotations

import json
import os

import pytest

from agevalx.cli import main

pytestmark = pytest.mark.unit

TASK_YAML = "tasks/demo-task/task.yaml"
CONFIG_FILES = ["ageval.yaml", TASK_YAML, "profiles.yaml"]

VALID_TASK = "format: ageval.task/1\ntask_id: demo-task\nagent_profiles: [{id: solver}]\n"

# The kinds every config file is checked against; the rarer kinds below are spread over the
# three files (they all go through the same reader).
BROKEN_EVERYWHERE = {
    "syntax-error": "format: [unclosed\n",
    "duplicate-key": "format: ageval.dataset/1\nformat: ageval.dataset/1\n",
    "top-level-list": "- format\n- dataset_id\n",
    "top-level-string": "just some text\n",
    "empty": "",
    "binary": b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)),
}

BROKEN_SOMEWHERE = {
    "bad-indentation": "format: ageval.dataset/1\n  dataset_id: x\n version: 1\n",
    "tab-indentation": "format: x\n\tdataset_id: y\n",
    "duplicate-nested-key": "format: x\ndefaults:\n  a: 1\n  a: 2\n",
    "top-level-int": "42\n",
    "only-comments": "# nothing here\n",
    "null-document": "~\n",
    "two-documents": "a: 1\n---\nb: 2\n",
    "python-tag": "x: !!python/object/apply:os.system ['true']\n",
    "unknown-tag": "x: !custom 1\n",
    "recursive-alias": "&a\nx: *a\n",
    "undefined-alias": "x: *nowhere\n",
    "unhashable-key": "? [a, b]\n: 1\n",
    "control-character": "format: \x07\n",
    "nul-byte": b"format: a\x00\n",
    "latin-1": "format: caf\xe9\n".encode("latin-1"),
    "utf-16": "format: ageval.dataset/1\n".encode("utf-16"),
    "over-one-mebibyte": b"# " + b"x" * (1 << 20) + b"\n",
}


def write(ds, relative, content):
    path = ds / relative
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")


@pytest.mark.parametrize("relative", CONFIG_FILES)
@pytest.mark.parametrize("content", list(BROKEN_EVERYWHERE.values()), ids=list(BROKEN_EVERYWHERE))
def test_unreadable_config_file_is_invalid_yaml(make_dataset, lock_fails, relative, content):
    ds = make_dataset()
    write(ds, relative, content)

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == ("invalid_yaml", f"{ds}/{relative}", None)
    assert error.message


@pytest.mark.parametrize(
    ("relative", "content"),
    [
        (CONFIG_FILES[index % len(CONFIG_FILES)], content)
        for index, content in enumerate(BROKEN_SOMEWHERE.values())
    ],
    ids=list(BROKEN_SOMEWHERE),
)
def test_odd_yaml_is_invalid_yaml(make_dataset, lock_fails, relative, content):
    ds = make_dataset()
    write(ds, relative, content)

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == ("invalid_yaml", f"{ds}/{relative}", None)


def test_syntax_error_names_the_line(make_dataset, lock_fails):
    ds = make_dataset("format: ageval.dataset/1\ndataset_id: acme/demo\nversion: [1\n")

    error = lock_fails(ds)

    assert error.code == "invalid_yaml"
    assert "line" in error.message


def test_duplicate_key_is_named_in_the_message(make_dataset, lock_fails):
    ds = make_dataset("format: ageval.dataset/1\ndataset_id: a\ndataset_id: b\nversion: '1'\n")

    error = lock_fails(ds)

    assert error.code == "invalid_yaml"
    assert "dataset_id" in error.message


@pytest.mark.parametrize("relative", CONFIG_FILES)
def test_directory_in_place_of_a_config_file_is_invalid_yaml(make_dataset, lock_fails, relative):
    ds = make_dataset()
    (ds / relative).unlink()
    (ds / relative).mkdir()

    error = lock_fails(ds)

    assert (error.code, error.file) == ("invalid_yaml", f"{ds}/{relative}")


def test_byte_order_mark_before_valid_yaml_is_accepted(make_dataset, lock_document):
    lock = lock_document(make_dataset(task="\ufeff" + VALID_TASK))

    assert lock["task_id"] == "demo-task"


def test_dataset_path_that_is_a_file_is_refused(make_dataset, lock_fails):
    ds = make_dataset()

    error = lock_fails(ds / "ageval.yaml")

    assert error.code == "dataset_not_found"


def test_profiles_option_naming_a_missing_file_is_missing_file(make_dataset, lock_fails, tmp_path):
    error = lock_fails(make_dataset(), profiles=tmp_path / "nope.yaml")

    assert (error.code, error.file) == ("missing_file", f"{tmp_path}/nope.yaml")


def test_profiles_option_naming_a_directory_is_invalid_yaml(make_dataset, lock_fails, tmp_path):
    error = lock_fails(make_dataset(), profiles=tmp_path)

    assert (error.code, error.file) == ("invalid_yaml", str(tmp_path))


def test_dangling_profiles_symlink_counts_as_no_profiles(make_dataset, lock_fails):
    ds = make_dataset(profiles=make_dataset.NO_FILE)
    os.symlink("nowhere.yaml", ds / "profiles.yaml")

    assert lock_fails(ds).code == "missing_profiles"


# wrong types, one field at a time

WRONG_TYPES = [
    ("root", {"dataset_id": ["acme"]}, "dataset_id"),
    ("root", {"version": {"major": 1}}, "version"),
    ("root", {"tasks": "tasks"}, "tasks"),
    ("root", {"tasks": {"root": 7}}, "tasks.root"),
    ("root", {"defaults": [1]}, "defaults"),
    ("root", {"defaults": None}, "defaults"),
    ("task", {"task_id": 12}, "task_id"),
    ("task", {"description": ["a"]}, "description"),
    ("task", {"parameters": [1, 2]}, "parameters"),
    ("task", {"parameters": "x=1"}, "parameters"),
    ("task", {"agent_profiles": {"id": "solver"}}, "agent_profiles"),
    ("task", {"agent_profiles": ["solver"]}, "agent_profiles[0]"),
    ("task", {"agent_profiles": [None]}, "agent_profiles[0]"),
    ("task", {"agent_profiles": [{"id": 5}]}, "agent_profiles[0].id"),
    ("task", {"limits": 300}, "limits"),
    ("task", {"limits": None}, "limits"),
    ("task", {"artifacts": []}, "artifacts"),
    ("task", {"artifacts": {"publishable": {"id": "x"}}}, "artifacts.publishable"),
    ("task", {"evaluation": "evaluator.py"}, "evaluation"),
    ("task", {"evaluation": {"inputs": "out.json"}}, "evaluation.inputs"),
    ("task", {"evaluation": {"environments": ["grader"]}}, "evaluation.environments"),
    ("task", {"evaluation": {"collect": {"path": "/a"}}}, "evaluation.collect"),
    ("task", {"provenance": "github"}, "provenance"),
    ("profiles", {"agent_profiles": ["solver"]}, "agent_profiles"),
    ("profiles", {"agent_profiles": {"solver": None}}, "agent_profiles.solver"),
    ("profiles", {"agent_profiles": {"solver": "acp"}}, "agent_profiles.solver"),
    (
        "profiles",
        {"agent_profiles": {"solver": {"options": ["entry"]}}},
        "agent_profiles.solver.options",
    ),
    (
        "profiles",
        {"agent_profiles": {"solver": {"extensions": "acp"}}},
        "agent_profiles.solver.extensions",
    ),
    (
        "profiles",
        {"agent_profiles": {"solver": {"extensions": ["acp"]}}},
        "agent_profiles.solver.extensions[0]",
    ),
    (
        "profiles",
        {"agent_profiles": {"solver": {"overlays": "overlays/a"}}},
        "agent_profiles.solver.overlays",
    ),
    ("profiles", {"agent_profiles": {"solver": {"api_key": 123}}}, "agent_profiles.solver.api_key"),
    (
        "profiles",
        {"agent_profiles": {"solver": {"base_url": "not a url"}}},
        "agent_profiles.solver.base_url",
    ),
    ("profiles", {"environment_options": "docker"}, "environment_options"),
    ("profiles", {"evaluate_host": True}, "evaluate_host"),
    ("profiles", {"evaluate_host": {"isolated": "yes"}}, "evaluate_host.isolated"),
]


@pytest.mark.parametrize(
    ("where", "override", "field"),
    WRONG_TYPES,
    ids=[
        f"{where}:{field}:{type(next(iter(o.values()))).__name__}"
        for where, o, field in WRONG_TYPES
    ],
)
def test_value_of_the_wrong_type_is_a_coded_error_at_its_field(
    make_dataset, lock_fails, where, override, field
):
    arguments = {"root": {"root_yaml": override}, "task": {"task": override}}.get(
        where, {"profiles": override}
    )
    ds = make_dataset(**arguments)

    error = lock_fails(ds)

    assert error.code in {"invalid_value", "model_not_object"}
    assert error.field == field
    assert error.file.endswith(
        {"root": "ageval.yaml", "task": "task.yaml"}.get(where, "profiles.yaml")
    )


@pytest.mark.parametrize(
    "text",
    ["parameters: {1: one}\n", "parameters: {null: none}\n", "parameters: {true: yes}\n"],
    ids=["int-key", "null-key", "bool-key"],
)
def test_non_string_mapping_key_is_invalid_yaml_at_its_mapping(make_dataset, lock_fails, text):
    ds = make_dataset(task=VALID_TASK + text)

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "invalid_yaml",
        f"{ds}/{TASK_YAML}",
        "parameters",
    )


def test_deeply_nested_yaml_is_invalid_yaml(make_dataset, lock_fails):
    error = lock_fails(
        make_dataset(task=VALID_TASK + "parameters: {x: " + "[" * 500 + "]" * 500 + "}\n")
    )

    assert error.code == "invalid_yaml"


# odd but parsable YAML: every one of these once escaped as an internal error


def lock_json(ds, capsys):
    code = main(["lock", str(ds), "--json"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, json.loads(captured.out)


ODD_INPUTS = {
    "binary-scalar": (
        "task",
        VALID_TASK + "parameters: {blob: !!binary gA==}\n",
        ("invalid_yaml", "parameters.blob"),
    ),
    "int-over-4300-digits": (
        "task",
        VALID_TASK + "parameters: {n: " + "9" * 4301 + "}\n",
        ("invalid_yaml", None),
    ),
    "mapping-nested-300-deep": (
        "task",
        VALID_TASK + "provenance: " + "{a: " * 300 + "1" + "}" * 300 + "\n",
        ("invalid_yaml", "provenance" + ".a" * 64),
    ),
    "tasks-root-with-nul": (
        "root",
        'format: ageval.dataset/1\ndataset_id: acme/demo\nversion: "1"\ntasks: {root: "a\\0b"}\n',
        ("invalid_path", "tasks.root"),
    ),
    "tasks-root-too-long": (
        "root",
        "format: ageval.dataset/1\ndataset_id: acme/demo\nversion: '1'\ntasks: {root: "
        + "a" * 300
        + "}\n",
        ("invalid_path", "tasks.root"),
    ),
}


@pytest.mark.parametrize(
    ("where", "text", "expected"), list(ODD_INPUTS.values()), ids=list(ODD_INPUTS)
)
def test_odd_but_parsable_input_is_a_coded_error(make_dataset, capsys, where, text, expected):
    ds = make_dataset(**({"task": text} if where == "task" else {"root_yaml": text}))

    code, document = lock_json(ds, capsys)

    assert code == 1
    assert (document["error"]["code"], document["error"]["field"]) == expected


@pytest.mark.parametrize("date", ["2024-02-30", "2024-13-01", "2024-01-31"])
def test_unquoted_date_is_kept_as_its_text(make_dataset, lock_document, date):
    ds = make_dataset(
        f"format: ageval.dataset/1\ndataset_id: acme/demo\nversion: {date}\n",
        task=VALID_TASK + f"parameters: {{released: {date}}}\n",
    )

    lock = lock_document(ds)

    assert lock["dataset"]["version"] == date
    assert lock["task"]["parameters"]["released"] == date


def test_symlink_loop_in_a_task_is_not_an_internal_error(make_dataset, capsys, private_cache):
    ds = make_dataset()
    os.symlink("loop", ds / "tasks" / "demo-task" / "loop")

    code, document = lock_json(ds, capsys)

    assert code in {0, 1}
    if code == 1:
        assert document["error"]["code"] != "internal_error", document


@pytest.mark.parametrize("value", [".nan", ".inf"])
def test_non_finite_number_in_parameters_is_refused(make_dataset, lock_fails, value):
    error = lock_fails(make_dataset(task=VALID_TASK + f"parameters: {{ratio: {value}}}\n"))

    assert error.field == "parameters.ratio"
