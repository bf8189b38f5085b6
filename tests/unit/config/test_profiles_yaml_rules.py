"""The rules of the job binding, profiles.yaml, each checked on both sides."""

from __future__ import annotations

import pytest
import yaml

from agevalx.config.pins import PINS_FILE

pytestmark = pytest.mark.unit

PINS = yaml.safe_load(PINS_FILE.read_text(encoding="utf-8"))["models"]
MODELS_WITH_EFFORTS = sorted(name for name, row in PINS.items() if (row or {}).get("efforts"))
MODELS_WITHOUT_EFFORTS = sorted(
    name for name, row in PINS.items() if not (row or {}).get("efforts")
)


def solver(**fields):
    """Overrides of the baseline `solver` profile."""
    return {"agent_profiles": {"solver": fields}}


def profiles_file(ds):
    return f"{ds}/profiles.yaml"


def role(lock, name="solver"):
    return lock["binding"]["roles"][name]


def test_baseline_profile_is_bound_with_its_defaults(make_dataset, lock_document):
    lock = lock_document(make_dataset())

    assert role(lock) == {
        "profile": "solver",
        "executor": "acp",
        "label": "pi",
        "entry": "pi",
        "api_key": None,
        "base_url": None,
        "model": None,
        "options": {"upstream_stall_seconds": 3600},
        "extensions": [],
        "overlays": {},
        "implementation": {"bundle": "pi", "spec": role(lock)["implementation"]["spec"]},
    }
    assert len(role(lock)["implementation"]["spec"]) == 32
    assert lock["binding"]["source"] == "profiles"
    assert lock["binding"]["profiles_file"] == "profiles.yaml"
    assert lock["binding"]["environment"] == "docker"


# format and shape


@pytest.mark.parametrize(
    "override",
    [{"format": None}, {"format": "ageval.profiles/2"}, {"format": "ageval.dataset/1"}],
    ids=["null", "version-2", "dataset-format"],
)
def test_profiles_format_other_than_profiles_1_is_invalid_format(
    make_dataset, lock_fails, override
):
    ds = make_dataset(profiles=override)

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "invalid_format",
        profiles_file(ds),
        "format",
    )


def test_missing_profiles_format_is_invalid_format(make_dataset, lock_fails):
    error = lock_fails(make_dataset(profiles={"format": make_dataset.DELETE}))

    assert (error.code, error.field) == ("invalid_format", "format")


def test_environment_other_than_docker_is_refused(make_dataset, lock_fails):
    ds = make_dataset(profiles={"environment": "local"})

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "invalid_value",
        profiles_file(ds),
        "environment",
    )


def test_environment_defaults_to_docker(make_dataset, lock_document):
    lock = lock_document(make_dataset(profiles={"environment": make_dataset.DELETE}))

    assert lock["binding"]["environment"] == "docker"


def test_unknown_profiles_key_is_unknown_field(make_dataset, lock_fails):
    error = lock_fails(make_dataset(profiles={"agents": {}}))

    assert (error.code, error.field) == ("unknown_field", "agents")


def test_task_role_without_profiles_yaml_is_missing_profiles(make_dataset, lock_fails):
    ds = make_dataset(profiles=make_dataset.NO_FILE)

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "missing_profiles",
        f"{ds}/tasks/demo-task/task.yaml",
        "agent_profiles[0].id",
    )


def test_task_role_absent_from_profiles_is_unknown_profile(make_dataset, lock_fails):
    ds = make_dataset(task={"agent_profiles": [{"id": "solver"}, {"id": "critic"}]})

    error = lock_fails(ds)

    assert (error.code, error.field) == ("unknown_profile", "agent_profiles[1].id")


@pytest.mark.parametrize("executor", ["docker", "local", "ACP", None])
def test_unknown_executor_is_refused(make_dataset, lock_fails, executor):
    error = lock_fails(make_dataset(profiles=solver(executor=executor)))

    assert (error.code, error.field) == ("invalid_value", "agent_profiles.solver.executor")


# acp entry


def test_acp_profile_without_entry_is_acp_missing_entry(make_dataset, lock_fails):
    ds = make_dataset(profiles=solver(options={"entry": make_dataset.DELETE}))

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "acp_missing_entry",
        profiles_file(ds),
        "agent_profiles.solver",
    )
    assert error.hint


def test_acp_profile_without_options_is_acp_missing_entry(make_dataset, lock_fails):
    error = lock_fails(make_dataset(profiles=solver(options=make_dataset.DELETE)))

    assert error.code == "acp_missing_entry"


def test_oracle_profile_needs_no_entry(make_dataset, lock_document):
    ds = make_dataset(
        profiles=solver(executor="oracle", options=make_dataset.DELETE),
        task_files={"solution/solve.sh": "#!/bin/sh\n"},
    )

    assert role(lock_document(ds))["executor"] == "oracle"


# label


def test_acp_label_defaults_to_the_entry(make_dataset, lock_document):
    ds = make_dataset(profiles=solver(options={"entry": "codex-acp", "agent": "not-a-label"}))

    assert role(lock_document(ds))["label"] == "codex-acp"


def test_oracle_label_defaults_to_the_executor(make_dataset, lock_document):
    ds = make_dataset(profiles=solver(executor="oracle", options=make_dataset.DELETE))

    assert role(lock_document(ds))["label"] == "oracle"


def test_explicit_label_is_kept(make_dataset, lock_document):
    assert role(lock_document(make_dataset(profiles=solver(label="my pi"))))["label"] == "my pi"


def test_empty_label_is_refused(make_dataset, lock_fails):
    error = lock_fails(make_dataset(profiles=solver(label="")))

    assert (error.code, error.field) == ("invalid_value", "agent_profiles.solver.label")


# model


def test_model_may_be_omitted_entirely(make_dataset, lock_document):
    assert role(lock_document(make_dataset()))["model"] is None


def test_model_written_as_null_is_like_no_model(make_dataset, lock_document):
    assert role(lock_document(make_dataset(profiles=solver(model=None))))["model"] is None


def test_nested_model_keeps_only_the_fields_written(make_dataset, lock_document):
    model = {"id": "gpt-5.4-mini", "api": "responses", "timeout": 120, "extra": {"top_p": 0.5}}

    assert role(lock_document(make_dataset(profiles=solver(model=model))))["model"] == model


@pytest.mark.parametrize(
    "model", ["gpt-5.4-mini", 5, ["gpt-5.4-mini"], True], ids=["str", "int", "list", "bool"]
)
def test_model_that_is_not_an_object_is_model_not_object(make_dataset, lock_fails, model):
    ds = make_dataset(profiles=solver(model=model))

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "model_not_object",
        profiles_file(ds),
        "agent_profiles.solver",
    )


@pytest.mark.parametrize(
    "key", ["api", "reasoning_effort", "timeout", "request_timeout", "watchdog", "extra_body"]
)
def test_model_setting_flattened_into_options_is_refused(make_dataset, lock_fails, key):
    ds = make_dataset(profiles=solver(options={key: "x"}))

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "model_option_flattened",
        profiles_file(ds),
        "agent_profiles.solver.options",
    )
    assert key in error.message


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_model_api_chat_or_responses_is_accepted(make_dataset, lock_document, api):
    lock = lock_document(make_dataset(profiles=solver(model={"api": api})))

    assert role(lock)["model"] == {"api": api}


@pytest.mark.parametrize("api", ["completions", "Chat", "", 1])
def test_model_api_other_than_chat_or_responses_is_refused(make_dataset, lock_fails, api):
    error = lock_fails(make_dataset(profiles=solver(model={"api": api})))

    assert (error.code, error.field) == ("invalid_value", "agent_profiles.solver.model.api")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("id", ""),
        ("timeout", 0),
        ("watchdog", -1),
        ("extra", []),
        ("reasoning", "high"),
        ("temperature", 0.2),
    ],
)
def test_malformed_model_field_is_refused(make_dataset, lock_fails, key, value):
    error = lock_fails(make_dataset(profiles=solver(model={key: value})))

    assert error.code in {"invalid_value", "unknown_field"}
    assert error.field.startswith(f"agent_profiles.solver.model.{key}")


def test_explicit_reasoning_effort_is_kept(make_dataset, lock_document):
    model = {"id": "o4-mini", "reasoning": {"effort": "low"}}

    assert role(lock_document(make_dataset(profiles=solver(model=model))))["model"] == model


@pytest.mark.parametrize("model_id", MODELS_WITH_EFFORTS)
def test_reasoning_effort_max_is_rewritten_to_the_highest_pinned_effort(
    make_dataset, lock_document, model_id
):
    ds = make_dataset(profiles=solver(model={"id": model_id, "reasoning": {"effort": "max"}}))

    lock = lock_document(ds)

    assert role(lock)["model"] == {
        "id": model_id,
        "reasoning": {"effort": PINS[model_id]["efforts"][-1]},
    }


def test_reasoning_effort_max_follows_the_model_given_on_the_command_line(
    make_dataset, lock_document
):
    ds = make_dataset(profiles=solver(model={"id": "gpt-5.4", "reasoning": {"effort": "max"}}))

    lock = lock_document(ds, agent="solver", model="o4-mini")

    assert role(lock)["model"]["reasoning"]["effort"] == PINS["o4-mini"]["efforts"][-1]


@pytest.mark.parametrize(
    "model",
    [{"id": "no-such-model"}, {}],
    ids=["unpinned-model", "no-model-id"],
)
def test_reasoning_effort_max_without_a_pin_is_model_pin_missing(make_dataset, lock_fails, model):
    ds = make_dataset(profiles=solver(model={**model, "reasoning": {"effort": "max"}}))

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "model_pin_missing",
        profiles_file(ds),
        "agent_profiles.solver.model.reasoning.effort",
    )


@pytest.mark.parametrize("model_id", MODELS_WITHOUT_EFFORTS)
def test_reasoning_effort_max_with_a_pin_listing_no_efforts_is_refused(
    make_dataset, lock_fails, model_id
):
    ds = make_dataset(profiles=solver(model={"id": model_id, "reasoning": {"effort": "max"}}))

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "model_pin_no_efforts",
        profiles_file(ds),
        "agent_profiles.solver.model.reasoning.effort",
    )


def test_pins_table_has_models_on_both_sides():
    assert MODELS_WITH_EFFORTS and MODELS_WITHOUT_EFFORTS


# options


def test_upstream_stall_defaults_to_3600_seconds(make_dataset, lock_document):
    assert role(lock_document(make_dataset()))["options"]["upstream_stall_seconds"] == 3600


@pytest.mark.parametrize("seconds", [0, 1, 86400])
def test_upstream_stall_of_zero_or_more_is_accepted(make_dataset, lock_document, seconds):
    ds = make_dataset(profiles=solver(options={"upstream_stall_seconds": seconds}))

    assert role(lock_document(ds))["options"]["upstream_stall_seconds"] == seconds


@pytest.mark.parametrize("seconds", [-1, 1.5, "60", None])
def test_negative_or_non_int_upstream_stall_is_refused(make_dataset, lock_fails, seconds):
    ds = make_dataset(profiles=solver(options={"upstream_stall_seconds": seconds}))

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "invalid_value",
        profiles_file(ds),
        "agent_profiles.solver.options.upstream_stall_seconds",
    )


def test_executor_options_are_passed_through_to_the_lock(make_dataset, lock_document):
    ds = make_dataset(profiles=solver(options={"script": "solution/script.yaml", "verbose": True}))

    options = role(lock_document(ds))["options"]

    assert options == {
        "upstream_stall_seconds": 3600,
        "script": "solution/script.yaml",
        "verbose": True,
    }


def test_retry_interval_is_not_a_setting(make_dataset, lock_fails):
    error = lock_fails(make_dataset(profiles=solver(retry_interval_seconds=60)))

    assert (error.code, error.field) == (
        "unknown_field",
        "agent_profiles.solver.retry_interval_seconds",
    )


def test_extensions_are_locked_by_plugin_name(make_dataset, lock_document):
    ds = make_dataset(profiles=solver(extensions=[{"plugin": "acp"}, {"plugin": "docker"}]))

    assert role(lock_document(ds))["extensions"] == ["acp", "docker"]


# overlays


def test_overlay_inside_overlays_is_locked_with_its_digest(make_dataset, lock_document):
    ds = make_dataset(
        profiles=solver(overlays=["overlays/pi/settings.json"]),
        files={"overlays/pi/settings.json": '{"locator": "hub://acme/pi-settings"}\n'},
    )

    overlays = role(lock_document(ds))["overlays"]

    assert list(overlays) == ["overlays/pi/settings.json"]
    assert len(overlays["overlays/pi/settings.json"]) == 32


@pytest.mark.parametrize(
    "path",
    [
        "settings.json",
        "config/overlays/x",
        "overlays",
        "overlays/",
        "overlays/../x",
        "/overlays/x",
        "overlays//x",
    ],
)
def test_overlay_path_not_starting_with_overlays_is_invalid_overlay_path(
    make_dataset, lock_fails, path
):
    ds = make_dataset(profiles=solver(overlays=[path]))

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "invalid_overlay_path",
        profiles_file(ds),
        "agent_profiles.solver.overlays",
    )


def test_missing_overlay_is_overlay_not_found(make_dataset, lock_fails):
    ds = make_dataset(profiles=solver(overlays=["overlays/missing.json"]))

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "overlay_not_found",
        profiles_file(ds),
        "agent_profiles.solver.overlays[0]",
    )


def test_overlay_that_is_a_directory_is_overlay_not_found(make_dataset, lock_fails):
    ds = make_dataset(
        profiles=solver(overlays=["overlays/pi"]), files={"overlays/pi/settings.json": "{}\n"}
    )

    assert lock_fails(ds).code == "overlay_not_found"


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("auth.txt", "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz012345\n"),
        ("gh.txt", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789\n"),
        ("auth.json", '{"api_key": "plain-text-key"}\n'),
        ("auth.yaml", "provider:\n  password: hunter2\n"),
    ],
    ids=["openai-key", "github-token", "json-api-key", "yaml-password"],
)
def test_overlay_holding_a_secret_is_secret_in_config(make_dataset, lock_fails, name, content):
    ds = make_dataset(
        profiles=solver(overlays=[f"overlays/{name}"]), files={f"overlays/{name}": content}
    )

    assert lock_fails(ds).code == "secret_in_config"


def test_overlay_holding_a_secret_reference_is_accepted(make_dataset, lock_document):
    ds = make_dataset(
        profiles=solver(overlays=["overlays/auth.json"]),
        files={"overlays/auth.json": '{"api_key": "${ZHIPU_API_KEY}"}\n'},
    )

    assert list(role(lock_document(ds))["overlays"]) == ["overlays/auth.json"]


# environment_options and evaluate_host


def test_python_version_defaults_to_3_12(make_dataset, lock_document):
    binding = lock_document(make_dataset())["binding"]

    assert binding["environment_options"]["python_version"] == "3.12"
    assert binding["evaluate_host"]["environment_options"]["python_version"] == "3.12"


@pytest.mark.parametrize("version", ["3.13", "3.9", "10.0"])
def test_python_minor_version_is_accepted(make_dataset, lock_document, version):
    ds = make_dataset(profiles={"environment_options": {"python_version": version}})

    assert lock_document(ds)["binding"]["environment_options"]["python_version"] == version


@pytest.mark.parametrize(
    "version",
    ["3", "3.13.1", "py3.12", "3.x", "", "3.12\n", " 3.12", "3.12-slim"],
)
def test_python_version_not_shaped_major_minor_is_invalid_python_version(
    make_dataset, lock_fails, version
):
    ds = make_dataset(profiles={"environment_options": {"python_version": version}})

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "invalid_python_version",
        profiles_file(ds),
        "environment_options.python_version",
    )


def test_python_version_of_the_scoring_host_has_the_same_shape(make_dataset, lock_fails):
    ds = make_dataset(
        profiles={"evaluate_host": {"environment_options": {"python_version": "3.12.1"}}}
    )

    error = lock_fails(ds)

    assert (error.code, error.field) == (
        "invalid_python_version",
        "evaluate_host.environment_options.python_version",
    )


def test_environment_options_are_locked(make_dataset, lock_document):
    options = {
        "image": "python:3.13-slim",
        "platform": "linux/amd64",
        "network": "none",
        "user": "1000:1000",
        "egress": "llm",
        "egress_allow": ["pypi.org"],
        "python_version": "3.13",
        "network_mode": "service:db",
    }

    lock = lock_document(make_dataset(profiles={"environment_options": options}))

    assert lock["binding"]["environment_options"] == options


@pytest.mark.parametrize(
    ("key", "value"),
    [("egress", "all"), ("egress_allow", "pypi.org"), ("image", ""), ("gpus", 1)],
)
def test_malformed_environment_option_is_refused(make_dataset, lock_fails, key, value):
    error = lock_fails(make_dataset(profiles={"environment_options": {key: value}}))

    assert error.code in {"invalid_value", "unknown_field"}
    assert error.field.startswith(f"environment_options.{key}")


def test_scoring_host_options_cannot_name_an_image(make_dataset, lock_fails):
    ds = make_dataset(
        profiles={"evaluate_host": {"isolated": True, "environment_options": {"image": "x"}}}
    )

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "unknown_field",
        profiles_file(ds),
        "evaluate_host.environment_options.image",
    )


def test_scoring_host_inherits_platform_user_and_python_but_not_the_network(
    make_dataset, lock_document
):
    ds = make_dataset(
        profiles={
            "environment_options": {
                "platform": "linux/arm64",
                "user": "agent",
                "python_version": "3.11",
                "network": "none",
                "egress": "llm",
                "egress_allow": ["api.example.com"],
            },
            "evaluate_host": {"isolated": True},
        }
    )

    host = lock_document(ds)["binding"]["evaluate_host"]

    assert host == {
        "isolated": True,
        "environment_options": {
            "platform": "linux/arm64",
            "user": "agent",
            "python_version": "3.11",
            "egress_allow": [],
        },
    }


def test_scoring_host_options_override_the_inherited_ones(make_dataset, lock_document):
    ds = make_dataset(
        profiles={
            "environment_options": {"platform": "linux/arm64", "user": "agent"},
            "evaluate_host": {
                "isolated": True,
                "environment_options": {
                    "platform": "linux/amd64",
                    "user": "grader",
                    "python_version": "3.13",
                    "egress": "none",
                },
            },
        }
    )

    options = lock_document(ds)["binding"]["evaluate_host"]["environment_options"]

    assert options == {
        "platform": "linux/amd64",
        "user": "grader",
        "python_version": "3.13",
        "egress": "none",
        "egress_allow": [],
    }


def test_scoring_host_is_shared_by_default(make_dataset, lock_document):
    assert lock_document(make_dataset())["binding"]["evaluate_host"]["isolated"] is False


def test_unquoted_python_version_is_invalid_python_version(make_dataset, lock_fails):
    ds = make_dataset(
        profiles="format: ageval.profiles/1\nenvironment_options:\n  python_version: 3.10\n"
    )

    error = lock_fails(ds)

    assert (error.code, error.field) == (
        "invalid_python_version",
        "environment_options.python_version",
    )


def test_python_version_with_non_ascii_digits_is_refused(make_dataset, lock_fails):
    ds = make_dataset(profiles={"environment_options": {"python_version": "٣.١٢"}})

    assert lock_fails(ds).code == "invalid_python_version"


@pytest.mark.parametrize("key", ["timeout", "watchdog"])
@pytest.mark.parametrize("value", [float("inf"), float("nan")], ids=["inf", "nan"])
def test_non_finite_model_seconds_are_refused(make_dataset, lock_fails, key, value):
    ds = make_dataset(profiles=solver(model={key: value}))

    error = lock_fails(ds)

    assert (error.code, error.field) == ("invalid_value", f"agent_profiles.solver.model.{key}")


def test_overlay_secret_error_points_at_the_overlay_entry(make_dataset, lock_fails):
    ds = make_dataset(
        profiles=solver(overlays=["overlays/auth.txt"]),
        files={"overlays/auth.txt": "key=sk-" + "a" * 40 + "\n"},
    )

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "secret_in_config",
        f"{ds}/overlays/auth.txt",
        "agent_profiles.solver.overlays[0]",
    )


def test_a_named_effort_outside_the_models_pin_is_refused(make_dataset, lock_fails):
    ds = make_dataset(profiles=solver(model={"id": "o4-mini", "reasoning": {"effort": "xhigh"}}))

    error = lock_fails(ds)

    assert (error.code, error.field) == (
        "reasoning_effort_unknown",
        "agent_profiles.solver.model.reasoning.effort",
    )
    assert "low, medium, high" in error.hint


@pytest.mark.parametrize("model_id", MODELS_WITHOUT_EFFORTS)
def test_a_named_effort_for_a_model_pinned_without_efforts_is_refused(
    make_dataset, lock_fails, model_id
):
    ds = make_dataset(profiles=solver(model={"id": model_id, "reasoning": {"effort": "low"}}))

    assert lock_fails(ds).code == "model_pin_no_efforts"


def test_a_named_effort_for_an_unpinned_model_is_kept(make_dataset, lock_document):
    model = {"id": "my-local-model", "reasoning": {"effort": "turbo"}}

    assert role(lock_document(make_dataset(profiles=solver(model=model))))["model"] == model


@pytest.mark.parametrize("value", [60, 5, "60"])
def test_a_retry_interval_in_options_is_refused_not_locked(make_dataset, lock_fails, value):
    ds = make_dataset(profiles=solver(options={"retry_interval_seconds": value}))

    error = lock_fails(ds)

    assert (error.code, error.file, error.field) == (
        "retry_interval_not_configurable",
        profiles_file(ds),
        "agent_profiles.solver.options",
    )
    assert error.hint and "upstream_stall_seconds" in error.hint
