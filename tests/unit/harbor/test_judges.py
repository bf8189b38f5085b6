"""Which verifier env entries are an LLM judge's endpoint and key (`formats/harbor/judges.py`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agevalx.cli import main
from agevalx.errors import ConfigError
from agevalx.formats.harbor.judges import AMBIGUOUS, INVALID, VerifierJudge, verifier_judges

pytestmark = pytest.mark.unit

FILE = "task/task.toml"


def test_a_base_url_and_its_key_share_a_prefix() -> None:
    written = {
        "EVAL_BASE_URL": "${JUDGE_URL}",
        "EVAL_API_KEY": "${JUDGE_API_KEY}",
        "EVAL_MODEL": "gpt-5.4-mini",
        "THRESHOLD": "0.5",
    }
    (judge,) = verifier_judges(written, FILE)
    assert judge == VerifierJudge("EVAL_", None, has_key=True)
    assert (judge.role, judge.base_url_name, judge.key_name) == (
        "eval",
        "EVAL_BASE_URL",
        "EVAL_API_KEY",
    )
    resolved = {"EVAL_BASE_URL": "http://localhost:8000/v1", "EVAL_API_KEY": "sk-1"}
    assert judge.endpoint(resolved, FILE) == "http://localhost:8000/v1"


def test_a_bare_base_url_is_the_judge_and_a_keyless_endpoint_is_routed_too() -> None:
    (judge,) = verifier_judges({"BASE_URL": "http://127.0.0.1:9/v1"}, FILE)
    assert (judge.role, judge.has_key, judge.key_name) == ("judge", False, "API_KEY")


def test_a_provider_key_alone_means_the_providers_default_endpoint() -> None:
    written = {"OPENAI_API_KEY": "${OPENAI_API_KEY}", "ANTHROPIC_API_KEY": "${ANTHROPIC_KEY}"}
    anthropic, openai = verifier_judges(written, FILE)
    assert (openai.role, openai.endpoint({}, FILE)) == ("openai", "https://api.openai.com/v1")
    assert anthropic.endpoint({}, FILE) == "https://api.anthropic.com"
    assert openai.base_url_name == "OPENAI_BASE_URL", "ageval sets it to the gateway"


def test_each_prefix_is_its_own_judge() -> None:
    written = {
        "EVAL_BASE_URL": "https://judge.example/v1",
        "EVAL_API_KEY": "${A}",
        "OPENAI_BASE_URL": "https://other.example/v1",
        "OPENAI_API_KEY": "${B}",
    }
    assert [judge.role for judge in verifier_judges(written, FILE)] == ["eval", "openai"]


def test_a_host_key_without_an_endpoint_is_refused_as_ambiguous() -> None:
    with pytest.raises(ConfigError) as caught:
        verifier_judges({"EVAL_API_KEY": "${JUDGE_API_KEY}"}, FILE)
    error = caught.value
    assert (error.code, error.file, error.field) == (AMBIGUOUS, FILE, "verifier.env.EVAL_API_KEY")
    assert "EVAL_BASE_URL" in (error.hint or "")


@pytest.mark.parametrize("value", ["literal-not-a-secret", "${NOT}-a-template"])
def test_a_key_written_literally_is_no_secret_and_is_left_alone(value: str) -> None:
    assert verifier_judges({"SEARCH_API_KEY": value, "OTHER": "x"}, FILE) == []


def test_names_that_only_look_alike_are_no_judges() -> None:
    written = {"MY_BASE_URLS": "x", "APIKEY": "${K}", "BASE_URL_FILE": "/tmp/u"}
    assert verifier_judges(written, FILE) == []


@pytest.mark.parametrize("value", ["", "judge.example/v1", "ftp://judge.example", "http://"])
def test_a_written_base_url_that_is_no_http_url_is_refused(value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        verifier_judges({"EVAL_BASE_URL": value}, FILE)
    assert (caught.value.code, caught.value.field) == (INVALID, "verifier.env.EVAL_BASE_URL")


def test_a_template_is_checked_once_resolved() -> None:
    (judge,) = verifier_judges({"EVAL_BASE_URL": "${JUDGE_URL}"}, FILE)
    with pytest.raises(ConfigError) as caught:
        judge.endpoint({"EVAL_BASE_URL": "not a url"}, FILE)
    assert caught.value.code == INVALID


def test_locking_a_harbor_task_refuses_an_ambiguous_verifier_env(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = tmp_path / "ask"
    (task / "tests").mkdir(parents=True)
    (task / "instruction.md").write_text("Answer.\n")
    (task / "tests/test.sh").write_text("#!/bin/bash\n")
    (task / "task.toml").write_text(
        '[environment]\ndocker_image = "ageval/base:bookworm"\n\n'
        '[verifier.env]\nGRADER_API_KEY = "${GRADER_API_KEY}"\n'
    )
    assert main(["lock", str(task), "--agent", "oracle", "--json"]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert (error["code"], error["field"]) == (AMBIGUOUS, "verifier.env.GRADER_API_KEY")
    assert error["file"] == str(task / "task.toml")
