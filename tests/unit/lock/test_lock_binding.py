"""Binding roles to agents: profiles.yaml, --profiles, --agent and --model."""

from __future__ import annotations

from pathlib import Path

import pytest

import agevalx
from agevalx import BindingRequest, UsageError

pytestmark = pytest.mark.unit

TWO_ROLE_PROFILES = """\
format: ageval.profiles/1
agent_profiles:
  writer: {executor: acp, options: {entry: pi}, model: {id: glm-4.6}}
  reviewer: {executor: acp, options: {entry: codex-acp}}
"""


def two_role_dataset(make_dataset):
    return make_dataset(
        task={"agent_profiles": [{"id": "writer"}, {"id": "reviewer"}]},
        profiles=TWO_ROLE_PROFILES,
        task_files={"solution/solve.sh": "#!/bin/sh\n"},
    )


def test_roles_are_bound_to_the_profiles_of_the_same_id(make_dataset, lock_document):
    lock = lock_document(two_role_dataset(make_dataset))

    roles = lock["binding"]["roles"]
    assert {name: (r["profile"], r["label"]) for name, r in roles.items()} == {
        "writer": ("writer", "pi"),
        "reviewer": ("reviewer", "codex-acp"),
    }
    assert roles["writer"]["model"] == {"id": "glm-4.6"}
    assert lock["overrides"] == {}
    assert lock["binding"]["source"] == "profiles"


def test_agent_and_profiles_together_are_a_usage_error(make_dataset, lock_fails):
    ds = make_dataset()

    error = lock_fails(ds, agent="oracle", profiles=ds / "profiles.yaml", kind=UsageError)

    assert (error.code, error.field) == ("agent_profiles_conflict", "--agent")
    assert error.exit_code == 2


def test_model_without_agent_is_a_usage_error(make_dataset, lock_fails):
    error = lock_fails(make_dataset(), model="gpt-5.4", kind=UsageError)

    assert (error.code, error.field) == ("model_requires_agent", "--model")
    assert error.exit_code == 2


@pytest.mark.parametrize(
    "request_",
    [BindingRequest(agent="oracle", profiles=Path("p.yaml")), BindingRequest(model="m")],
    ids=["agent+profiles", "model-alone"],
)
def test_usage_errors_are_raised_before_the_dataset_is_read(tmp_path, cache_dir, request_):
    with pytest.raises(UsageError):
        agevalx.lock(tmp_path / "does-not-exist", request=request_)


def test_agent_oracle_binds_every_role(make_dataset, lock_document):
    lock = lock_document(two_role_dataset(make_dataset), agent="oracle")

    roles = lock["binding"]["roles"]
    assert sorted(roles) == ["reviewer", "writer"]
    for bound in roles.values():
        assert (bound["profile"], bound["executor"], bound["label"]) == (
            "oracle",
            "oracle",
            "oracle",
        )
        assert bound["model"] is None
    assert lock["binding"]["source"] == "agent"
    assert lock["overrides"] == {"agent": "oracle"}


def test_agent_oracle_binds_the_default_role_of_a_task_without_roles(make_dataset, lock_document):
    ds = make_dataset(task={"agent_profiles": []}, profiles=make_dataset.NO_FILE)

    lock = lock_document(ds, agent="oracle")

    assert list(lock["binding"]["roles"]) == ["solver"]
    assert lock["binding"]["profiles_file"] is None


def test_agent_naming_a_profile_binds_it_to_every_role(make_dataset, lock_document):
    lock = lock_document(two_role_dataset(make_dataset), agent="reviewer")

    assert {r["profile"] for r in lock["binding"]["roles"].values()} == {"reviewer"}
    assert {r["entry"] for r in lock["binding"]["roles"].values()} == {"codex-acp"}


def test_agent_with_model_writes_the_model_id(make_dataset, lock_document):
    lock = lock_document(two_role_dataset(make_dataset), agent="writer", model="gpt-5.4-mini")

    for bound in lock["binding"]["roles"].values():
        assert bound["model"] == {"id": "gpt-5.4-mini"}
    assert lock["overrides"] == {"agent": "writer", "model": "gpt-5.4-mini"}


def test_model_override_keeps_the_other_model_fields(make_dataset, lock_document):
    ds = make_dataset(
        profiles={"agent_profiles": {"solver": {"model": {"id": "glm-4.6", "api": "chat"}}}}
    )

    lock = lock_document(ds, agent="solver", model="o4-mini")

    assert lock["binding"]["roles"]["solver"]["model"] == {"id": "o4-mini", "api": "chat"}


def test_unknown_agent_is_a_usage_error(make_dataset, lock_fails):
    error = lock_fails(make_dataset(), agent="nobody", kind=UsageError)

    assert (error.code, error.field) == ("unknown_agent", "--agent")
    assert "oracle" in error.hint and "solver" in error.hint


def test_profiles_option_replaces_the_dataset_profiles(make_dataset, lock_document, tmp_path):
    ds = make_dataset(profiles={"agent_profiles": {"solver": {"label": "from-dataset"}}})
    other = tmp_path / "elsewhere" / "team-profiles.yaml"
    other.parent.mkdir()
    other.write_text(
        "format: ageval.profiles/1\n"
        "agent_profiles:\n"
        "  solver: {executor: acp, label: from-option, options: {entry: goose}}\n"
    )

    lock = lock_document(ds, profiles=other)

    assert lock["binding"]["roles"]["solver"]["label"] == "from-option"
    assert lock["binding"]["profiles_file"] == "team-profiles.yaml"


def test_profiles_option_is_validated_like_the_dataset_profiles(make_dataset, lock_fails, tmp_path):
    other = tmp_path / "bad-profiles.yaml"
    other.write_text("format: ageval.profiles/1\nagent_profiles: {solver: {executor: acp}}\n")

    error = lock_fails(make_dataset(), profiles=other)

    assert (error.code, error.file, error.field) == (
        "acp_missing_entry",
        str(other),
        "agent_profiles.solver",
    )


def test_dataset_profiles_are_used_when_no_binding_is_given(make_dataset, lock_document):
    lock = lock_document(make_dataset())

    assert lock["binding"]["profiles_file"] == "profiles.yaml"
    assert lock["binding"]["roles"]["solver"]["entry"] == "pi"


@pytest.mark.parametrize(
    ("binding", "flag"),
    [({"agent": "solver", "model": ""}, "--model"), ({"agent": " "}, "--agent")],
    ids=["empty-model", "blank-agent"],
)
def test_empty_agent_or_model_on_the_command_line_is_refused(
    make_dataset, lock_fails, binding, flag
):
    error = lock_fails(make_dataset(), kind=UsageError, **binding)

    assert (error.code, error.field) == ("empty_value", flag)


def test_a_catalog_agent_binds_by_name_with_its_providers_variables(
    make_dataset, lock_document, monkeypatch
):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:8000/v1")

    lock = lock_document(make_dataset(), agent="pi", model="openai/gpt-5.4-mini")

    role = lock["binding"]["roles"]["solver"]
    assert (role["executor"], role["entry"]) == ("acp", "pi")
    assert role["api_key"] == "${OPENAI_API_KEY}", "a reference, never a value"
    assert role["base_url"] == "http://localhost:8000/v1"
    assert role["model"] == {"id": "gpt-5.4-mini"}, "the provider prefix is not the model's"
    assert role["options"]["provider"] == "openai"
    assert role["implementation"]["bundle"] == "pi"
    assert lock["overrides"] == {"agent": "pi", "model": "openai/gpt-5.4-mini"}


def test_a_model_without_a_known_provider_prefix_keeps_its_slash(make_dataset, lock_document):
    lock = lock_document(make_dataset(), agent="pi", model="qwen/qwen3-coder")

    role = lock["binding"]["roles"]["solver"]
    assert role["model"] == {"id": "qwen/qwen3-coder"}
    assert role["options"]["provider"] == "openai"


def test_a_provider_the_agent_cannot_talk_to_is_a_usage_error(make_dataset, lock_fails):
    error = lock_fails(make_dataset(), agent="pi", model="anthropic/claude-x", kind=UsageError)

    assert (error.code, error.field) == ("agent_provider_unsupported", "--model")
    assert "openai" in error.hint


def test_a_catalog_agent_needs_a_model(make_dataset, lock_fails):
    error = lock_fails(make_dataset(), agent="pi", kind=UsageError)

    assert (error.code, error.field) == ("model_required", "--model")
    assert "OPENAI_API_KEY" in error.hint


def test_unknown_agent_lists_the_catalog(make_dataset, lock_fails):
    error = lock_fails(make_dataset(), agent="nobody", kind=UsageError)

    for name in agevalx.agents.catalog.agents():
        assert name in error.hint


def test_another_endpoint_in_the_environment_is_another_lock_key(make_dataset, monkeypatch):
    from agevalx.lockfile.request import agent_key_value

    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:8011/v1")
    first = agent_key_value("pi")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:8012/v1")
    assert agent_key_value("pi") != first
    assert agent_key_value("oracle") == "oracle" and agent_key_value(None) is None
