"""Harbor tasks verified in a `separate` environment, through `ageval run`, and parity with the
real Harbor on the same tasks (tests/integration/data/harbor-separate).

Each task's test.sh prints one `ok:`/`FAILED:` line per check of what the fresh verifier
environment holds; its reward is 1 only when every check passes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from agevalx.cli import main
from tests.integration.harbor.test_parity import _harbor_run, _install_harbor

pytestmark = pytest.mark.integration

SEPARATE = Path(__file__).resolve().parents[1] / "data/harbor-separate"

EXPECTED = {
    "artifacts": 1.0,
    "undeclared": 0.0,
    "bundled-tests": 1.0,
    "verifier-environment": 1.0,
}
"""The reward of each task's oracle run, in ageval as in Harbor."""


def run(capsys: pytest.CaptureFixture[str], dataset: Path, task: str) -> dict[str, Any]:
    code = main(["run", str(dataset), "--task", task, "--agent", "oracle", "--json"])
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert code == 0, document
    return document


def outcomes(document: dict[str, Any]) -> dict[str, str]:
    return {node["id"]: node["outcome"] for node in document["nodes"]}


def test_artifacts_are_restored_in_a_fresh_verifier_environment(copy_dataset, capsys) -> None:
    result = run(capsys, copy_dataset(SEPARATE), "artifacts")["results"][0]
    assert result["status"] == "PASS", result["evaluator_output"]
    assert "FAILED" not in result["evaluator_output"]
    assert "ok: [ ! -e /tmp/undeclared.txt ]" in result["evaluator_output"]


def test_an_undeclared_file_is_not_seen_by_the_verifier(copy_dataset, capsys) -> None:
    result = run(capsys, copy_dataset(SEPARATE), "undeclared")["results"][0]
    assert result["status"] == "FAIL" and result["score"] == 0.0


def test_a_verifier_image_built_from_tests_owns_the_tests(copy_dataset, capsys) -> None:
    result = run(capsys, copy_dataset(SEPARATE), "bundled-tests")["results"][0]
    assert result["status"] == "PASS", result["evaluator_output"]


def test_a_verifier_environment_has_its_own_workdir_and_env(copy_dataset, capsys) -> None:
    result = run(capsys, copy_dataset(SEPARATE), "verifier-environment")["results"][0]
    assert result["status"] == "PASS", result["evaluator_output"]


def test_editing_separate_tests_reruns_only_the_verifier(copy_dataset, capsys) -> None:
    dataset = copy_dataset(SEPARATE)
    run(capsys, dataset, "bundled-tests")
    test_sh = dataset / "bundled-tests/tests/test.sh"
    test_sh.write_text(test_sh.read_text() + "echo 0.5 > /logs/verifier/reward.txt\n")
    document = run(capsys, dataset, "bundled-tests")
    outcome = outcomes(document)
    assert outcome["run:bundled-tests#0"] == "reused"
    assert outcome["evaluate:bundled-tests#0"] == "computed"
    assert document["results"][0]["score"] == 0.5  # the verifier image was rebuilt


@pytest.fixture(scope="module")
def harbor_trials(tmp_path_factory: pytest.TempPathFactory, docker_engine: object) -> Any:
    """Harbor's trial per task: rewards, exception and test.sh's output."""
    harbor = _install_harbor()
    work = tmp_path_factory.mktemp("harbor-separate-parity")
    shutil.copytree(SEPARATE, work / "dataset")
    output = _harbor_run(harbor, work, "separate", [])
    trials: dict[str, dict[str, Any]] = {}
    for path in (work / "jobs" / "separate").glob("*/result.json"):
        result = json.loads(path.read_text())
        stdout = path.parent / "verifier" / "test-stdout.txt"
        trials[result["task_name"]] = {
            "rewards": (result.get("verifier_result") or {}).get("rewards"),
            "exception": (result.get("exception_info") or {}).get("exception_type"),
            "output": stdout.read_text() if stdout.exists() else None,
        }
    assert set(trials) == set(EXPECTED), output
    return trials


@pytest.mark.parametrize("task", sorted(EXPECTED))
def test_separate_task_matches_harbor(task: str, harbor_trials, copy_dataset, capsys) -> None:
    harbor = harbor_trials[task]
    assert harbor["exception"] is None and harbor["rewards"] == {"reward": EXPECTED[task]}, harbor
    result = run(capsys, copy_dataset(SEPARATE), task)["results"][0]
    assert result["details"]["extra"]["eval_raw_data"]["rewards"] == harbor["rewards"]
    assert result["evaluator_output"] == harbor["output"]
