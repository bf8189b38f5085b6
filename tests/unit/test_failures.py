"""The failure catalogue: every code the source raises is in it, once, with its class."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from agevalx.failures import (
    CATALOGUE,
    FAILURE_CLASSES,
    failure_class,
    infrastructure_lines,
    is_infrastructure,
    markdown_table,
)
from tests.unit.codescan import raised_codes, sources_of

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def _codes(**modules: str) -> set[str]:
    return set(raised_codes({name: textwrap.dedent(text) for name, text in modules.items()}))


def test_every_code_the_source_raises_is_in_the_catalogue() -> None:
    found = raised_codes(sources_of(ROOT))
    missing = {code: sorted(modules) for code, modules in found.items() if code not in CATALOGUE}
    assert not missing, f"add these codes to agevalx/failures.py: {missing}"
    # the scan reaches every way the package raises codes, not a lucky few
    for code in (
        "agent_crashed",
        "evaluator_error",
        "model_upstream_unavailable",
        "harbor_task_invalid",
        "not_computed",
        "model_traffic_diverged",
        "collect_timeout",
        "verifier_sandbox_failed",
        "invalid_dataset_id",
    ):
        assert code in found, code


def test_the_scan_finds_a_code_raised_in_each_form() -> None:
    found = _codes(
        pkg_errors="""
            NEW_CONSTANT = "brand_new_constant"
            LABEL = "ageval"
        """,
        pkg_mod="""
            from pkg_errors import NEW_CONSTANT
            import pkg_errors as errors

            def coded(code, message):
                return (code, message)

            def outcome(status, code, message):
                return status

            class Thing:
                code: Literal["literal_one", "literal_two"]

            raise AgevalError("first_positional", "a message with spaces")
            raise UsageError(
                "on_its_own_line",
                "message",
            )
            raise ConfigError(NEW_CONSTANT, "m")
            info = ErrorInfo(code="keyword_code", stage="run", message="m")
            model = Whatever(code="keyword_anywhere")
            code = "assigned" if flag else "assigned_else"
            raise _Failed("private_failed", "m")
            coded("through_a_helper", "m")
            outcome(1, "second_parameter", "m")
            route(errors.NEW_CONSTANT)
            record = {"code": "in_a_dict"}
            warn(AgevalWarning(code="a_warning_code", message="m"))
            raise ValueError("not_a_code_message")
            send(LABEL)
        """,
    )
    assert found == {
        "brand_new_constant",
        "literal_one",
        "literal_two",
        "first_positional",
        "on_its_own_line",
        "keyword_code",
        "keyword_anywhere",
        "assigned",
        "assigned_else",
        "private_failed",
        "through_a_helper",
        "second_parameter",
        "in_a_dict",
    }


def test_the_check_fails_on_a_code_missing_from_the_catalogue() -> None:
    sources = {**sources_of(ROOT), "agevalx.fake": 'raise AgevalError("no_such_code_here", "m")'}
    found = raised_codes(sources)
    assert set(found) - set(CATALOGUE) == {"no_such_code_here"}
    assert found["no_such_code_here"] == {"agevalx.fake"}


def test_each_code_has_one_class_and_a_one_line_meaning() -> None:
    for code, failure in CATALOGUE.items():
        assert failure.code == code
        assert failure.failure_class in FAILURE_CLASSES
        assert failure.meaning and "\n" not in failure.meaning and "|" not in failure.meaning
    assert list(CATALOGUE) == sorted(CATALOGUE)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("agent_crashed", "agent"),
        ("agent_timeout", "agent"),
        ("image_build_failed", "task"),
        ("setup_failed", "task"),
        ("evaluator_error", "task"),
        ("invalid_yaml", "task"),
        ("docker_unavailable", "infrastructure"),
        ("image_unavailable", "infrastructure"),
        ("model_upstream_unavailable", "infrastructure"),
        ("cluster_worker_lost", "infrastructure"),
        ("environment_lost", "infrastructure"),
        ("scoring_environment_lost", "infrastructure"),
        ("model_stream_broken", "infrastructure"),
        ("engine_unavailable", "infrastructure"),
        ("disk_full", "infrastructure"),
        ("job_limit_reached", "infrastructure"),
    ],
)
def test_failure_class_of_known_codes(code: str, expected: str) -> None:
    assert failure_class(code) == expected
    assert is_infrastructure(code) == (expected == "infrastructure")


def test_an_unknown_code_counts_as_the_agents() -> None:
    assert failure_class("some_future_code") == "agent"
    assert not is_infrastructure("some_future_code")


def test_the_docs_list_the_catalogue_as_the_module_prints_it() -> None:
    text = (ROOT / "docs" / "failures.md").read_text(encoding="utf-8")
    assert "## Failure classes" in text
    table = text[text.index("| code | class | meaning |") :]
    assert table == markdown_table()
    assert len(table.splitlines()) == len(CATALOGUE) + 2


def test_the_loud_lines_count_infrastructure_codes_and_the_spend_limit_apart() -> None:
    codes = ["agent_crashed", "disk_full", "environment_lost", "disk_full", "job_limit_reached"]
    assert infrastructure_lines(codes) == [
        "3 infrastructure failures, not scored (disk_full×2, environment_lost×1); "
        "--count-infra-as-fail counts them",
        "1 attempt stopped by the job's spend limit, not scored",
    ]
    assert infrastructure_lines(["engine_unavailable"], counted=True) == [
        "1 infrastructure failure, counted as not passed (--count-infra-as-fail): "
        "engine_unavailable×1"
    ]
    assert infrastructure_lines(["agent_crashed", "image_build_failed"]) == []
