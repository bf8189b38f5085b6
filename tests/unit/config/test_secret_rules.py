"""Secrets: written as ${VAR} references, never as values, and never copied into a lock."""

from __future__ import annotations

import json

import pytest

from agevalx.cli import main
from agevalx.config.secrets import (
    find_literal_secret,
    is_reference,
    looks_like_secret_value,
)

pytestmark = pytest.mark.unit

OPENAI_KEY = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2
ANTHROPIC_KEY = "sk-ant-api03-" + "Zz09" * 10
GITHUB_TOKEN = "ghp_" + "0123456789abcdefghij" * 2
GITHUB_PAT = "github_pat_" + "11ABCDEFG0" * 4
AWS_KEY = "AKIA" + "ABCDEFGHIJKLMNOP"
HF_TOKEN = "hf_" + "abcdefghij" * 4


def solver(**fields):
    return {"agent_profiles": {"solver": fields}}


def test_api_key_reference_is_accepted_and_locked_as_the_reference(make_dataset, lock_document):
    ds = make_dataset(profiles=solver(api_key="${ZHIPU_API_KEY}"))

    lock = lock_document(ds)

    assert lock["binding"]["roles"]["solver"]["api_key"] == "${ZHIPU_API_KEY}"


def test_value_of_a_referenced_variable_never_reaches_the_lock(
    make_dataset, cache_dir, monkeypatch, capsys
):
    value = "zhipu-secret-value-0123456789"
    monkeypatch.setenv("ZHIPU_API_KEY", value)
    ds = make_dataset(profiles=solver(api_key="${ZHIPU_API_KEY}"))

    assert main(["lock", str(ds), "--json"]) == 0

    written = (ds / ".ageval" / "locks" / "demo-task.lock.json").read_bytes()
    assert value.encode() not in written
    assert b"${ZHIPU_API_KEY}" in written
    output = capsys.readouterr()
    assert value not in output.out + output.err
    for path in (ds / ".ageval").rglob("*"):
        if path.is_file():
            assert value.encode() not in path.read_bytes(), path


def test_unset_referenced_variable_does_not_fail_the_lock(make_dataset, lock_document, monkeypatch):
    monkeypatch.delenv("UNSET_FOR_LOCK_TEST", raising=False)
    ds = make_dataset(profiles=solver(api_key="${UNSET_FOR_LOCK_TEST}"))

    assert lock_document(ds)["binding"]["roles"]["solver"]["api_key"] == "${UNSET_FOR_LOCK_TEST}"


@pytest.mark.parametrize(
    "api_key",
    [
        "plain-text-key",
        OPENAI_KEY,
        "$ZHIPU_API_KEY",
        "${ZHIPU_API_KEY",
        "${A}${B}",
        "prefix-${A}",
        "",
    ],
    ids=["literal", "openai", "no-braces", "unclosed", "two-refs", "embedded", "empty"],
)
def test_api_key_that_is_not_a_single_reference_is_secret_in_config(
    make_dataset, lock_fails, api_key
):
    ds = make_dataset(profiles=solver(api_key=api_key))

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "secret_in_config",
        f"{ds}/profiles.yaml",
        "agent_profiles.solver.api_key",
    )
    assert "${" in error.hint


def test_error_about_a_literal_secret_does_not_repeat_it(make_dataset, lock_fails):
    error = lock_fails(make_dataset(profiles=solver(api_key=OPENAI_KEY)))

    assert OPENAI_KEY not in str(error.to_dict())


@pytest.mark.parametrize(
    "secret",
    [OPENAI_KEY, ANTHROPIC_KEY, GITHUB_TOKEN, GITHUB_PAT, AWS_KEY, HF_TOKEN],
    ids=["openai", "anthropic", "github", "github-pat", "aws", "huggingface"],
)
def test_credential_shaped_value_in_profile_options_is_secret_in_config(
    make_dataset, lock_fails, secret
):
    ds = make_dataset(profiles=solver(options={"entry": "pi", "auth": secret}))

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "secret_in_config",
        f"{ds}/profiles.yaml",
        "agent_profiles.solver.options.auth",
    )


@pytest.mark.parametrize(
    ("task", "field"),
    [
        ({"parameters": {"endpoint": OPENAI_KEY}}, "parameters.endpoint"),
        (
            {"parameters": {"headers": ["Authorization: Bearer " + OPENAI_KEY]}},
            "parameters.headers[0]",
        ),
        (
            {"parameters": {"nested": {"deep": {"token": GITHUB_TOKEN}}}},
            "parameters.nested.deep.token",
        ),
        (
            {"provenance": {"source": "https://" + GITHUB_TOKEN + "@github.com/x/y"}},
            "provenance.source",
        ),
        ({"description": "uses " + OPENAI_KEY}, "description"),
    ],
    ids=["parameter", "list-item", "nested", "provenance-url", "description"],
)
def test_credential_shaped_value_anywhere_in_task_yaml_is_secret_in_config(
    make_dataset, lock_fails, task, field
):
    ds = make_dataset(task=task)

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "secret_in_config",
        f"{ds}/tasks/demo-task/task.yaml",
        field,
    )


def test_credential_shaped_value_in_ageval_yaml_is_secret_in_config(make_dataset, lock_fails):
    ds = make_dataset({"version": GITHUB_TOKEN})

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "secret_in_config",
        f"{ds}/ageval.yaml",
        "version",
    )


def test_credential_shaped_value_in_a_list_of_profiles_is_secret_in_config(
    make_dataset, lock_fails
):
    ds = make_dataset(profiles={"environment_options": {"egress_allow": ["ok.example", HF_TOKEN]}})

    error = lock_fails(ds)

    assert (error.code, error.field) == ("secret_in_config", "environment_options.egress_allow[1]")


@pytest.mark.parametrize(
    "key", ["password", "db_password", "token", "GITHUB_TOKEN", "client_secret", "access_key"]
)
def test_credential_named_key_with_a_literal_value_is_secret_in_config(
    make_dataset, lock_fails, key
):
    ds = make_dataset(task={"parameters": {key: "literal"}})

    error = lock_fails(ds)

    assert (error.code, error.field) == ("secret_in_config", f"parameters.{key}")


@pytest.mark.parametrize("key", ["password", "token", "api_key"])
def test_credential_named_key_holding_a_reference_is_accepted(make_dataset, lock_document, key):
    ds = make_dataset(task={"parameters": {key: "${DB_PASSWORD}"}})

    assert lock_document(ds)["task"]["parameters"][key] == "${DB_PASSWORD}"


@pytest.mark.parametrize("key", ["max_tokens", "tokenizer", "secretary", "keyboard"])
def test_keys_that_only_resemble_credential_names_are_accepted(make_dataset, lock_document, key):
    ds = make_dataset(task={"parameters": {key: "gpt2"}})

    assert lock_document(ds)["task"]["parameters"][key] == "gpt2"


def test_api_key_on_a_task_role_is_refused(make_dataset, lock_fails):
    ds = make_dataset(task={"agent_profiles": [{"id": "solver", "api_key": "sk-literal"}]})

    error = lock_fails(ds)

    assert error.code in {"secret_in_config", "forbidden_role_field"}
    assert error.file == f"{ds}/tasks/demo-task/task.yaml"


def test_secret_is_refused_before_anything_is_written(make_dataset, lock_fails):
    ds = make_dataset(profiles=solver(api_key=OPENAI_KEY))

    lock_fails(ds)

    assert not (ds / ".ageval" / "locks").exists()


def test_credential_shaped_mapping_key_is_secret_in_config(make_dataset, lock_fails):
    ds = make_dataset(task={"parameters": {"headers": {OPENAI_KEY: "bearer"}}})

    error = lock_fails(ds)

    assert (error.code, error.file) == ("secret_in_config", f"{ds}/tasks/demo-task/task.yaml")


def test_refusal_of_a_credential_shaped_key_does_not_repeat_it(make_dataset, lock_fails):
    ds = make_dataset(task={"parameters": {"headers": {OPENAI_KEY: "bearer"}}})

    error = lock_fails(ds)

    assert OPENAI_KEY not in json.dumps(error.to_dict())


# the helpers on their own


@pytest.mark.parametrize("value", ["${A}", "${ZHIPU_API_KEY}", "${_x1}"])
def test_reference_shape_is_recognised(value):
    assert is_reference(value)


@pytest.mark.parametrize("value", ["$A", "${1A}", "${A-B}", "${A} ", "x${A}", None, 5])
def test_non_reference_is_not_recognised(value):
    assert not is_reference(value)


@pytest.mark.parametrize(
    "value",
    [
        OPENAI_KEY,
        ANTHROPIC_KEY,
        GITHUB_TOKEN,
        GITHUB_PAT,
        AWS_KEY,
        HF_TOKEN,
        "-----BEGIN RSA PRIVATE KEY-----",
    ],
)
def test_well_known_credential_shapes_are_detected(value):
    assert looks_like_secret_value(value)


@pytest.mark.parametrize(
    "value", ["sk-short", "gpt-5.4-mini", "https://api.example.com/v1", "ghp_short"]
)
def test_ordinary_values_are_not_credentials(value):
    assert not looks_like_secret_value(value)


def test_first_literal_secret_is_reported_by_its_field_path():
    document = {"a": [{"ok": 1}, {"b": {"c": GITHUB_TOKEN}}], "z": OPENAI_KEY}

    assert find_literal_secret(document) == "a[1].b.c"


def test_document_with_only_references_has_no_literal_secret():
    assert find_literal_secret({"api_key": "${K}", "token": None, "list": ["${T}"]}) is None
