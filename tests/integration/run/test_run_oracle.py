"""`ageval run` end to end on the real Docker engine, with the oracle agent."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from agevalx.cli import main
from agevalx.environments.container import SESSION
from agevalx.environments.engine import client
from agevalx.environments.owners import owner_labels
from tests.integration.conftest import committed_image
from tests.integration.engine_events import EVENTS

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
RUNCASES = ROOT / "tests/integration/data/runcases"


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["run", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def outcome(document: dict[str, Any], node: str) -> str:
    return next(item["outcome"] for item in document["nodes"] if item["id"] == node)


def containers_created_since(started: float) -> int:
    """Containers this process created (other processes may share the engine)."""
    return len(EVENTS.created(started, "ageval.session", SESSION))


def test_oracle_passes_and_a_second_run_starts_no_container(copy_dataset, capsys) -> None:
    dataset = copy_dataset(RUNCASES)
    began = time.time()
    code, first = run_json(capsys, str(dataset), "--task", "echo-pass")
    assert code == 0, first
    assert containers_created_since(began) >= 1  # the count sees this process's containers
    result = first["results"][0]
    assert result["status"] == "PASS" and result["score"] == 1.0
    attempt = dataset / ".ageval/runs" / result["attempt_id"]
    assert json.loads((attempt / "result.json").read_text())["status"] == "PASS"
    activity = [json.loads(line) for line in (attempt / "activity.jsonl").read_text().splitlines()]
    assert [record["type"] for record in activity] == ["terminal", "invocation", "checkpoint"]
    assert "solve.sh" in activity[0]["command"] and activity[0]["exit_code"] == 0

    started = time.time()
    code, second = run_json(capsys, str(dataset), "--task", "echo-pass")
    assert code == 0
    assert second["counts"]["computed"] == 0
    assert second["results"][0]["status"] == "PASS"
    assert second["results"][0]["attempt_id"] == result["attempt_id"]
    assert containers_created_since(started) == 0


def test_editing_the_evaluator_reruns_only_evaluation(copy_dataset, capsys) -> None:
    dataset = copy_dataset(RUNCASES)
    run_json(capsys, str(dataset), "--task", "echo-pass")
    evaluator = dataset / "tasks/echo-pass/evaluator.py"
    evaluator.write_text(evaluator.read_text().replace('"PASS" if ok', '"FAIL" if ok'))
    code, document = run_json(capsys, str(dataset), "--task", "echo-pass")
    assert code == 0
    assert outcome(document, "run:echo-pass#0") == "reused"
    assert outcome(document, "image:echo-pass") == "reused"
    assert outcome(document, "evaluate:echo-pass#0") == "computed"
    assert document["results"][0]["status"] == "FAIL"


def test_evaluation_restores_the_cached_run_when_its_container_image_is_gone(
    copy_dataset, capsys
) -> None:
    dataset = copy_dataset(RUNCASES)
    # A salted image key gives this test a run node (and a committed image) of its own, so
    # removing the image takes nothing from another test that shares the cache.
    dockerfile = dataset / "tasks/echo-pass/environment/Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + f"# salt {uuid.uuid4().hex}\n")
    _, first = run_json(capsys, str(dataset), "--task", "echo-pass")
    run_node = next(item for item in first["nodes"] if item["id"] == "run:echo-pass#0")
    client().images.remove(committed_image(run_node["key"]), force=True, noprune=True)
    evaluator = dataset / "tasks/echo-pass/evaluator.py"
    evaluator.write_text(evaluator.read_text() + "\n# re-score\n")
    code, document = run_json(capsys, str(dataset), "--task", "echo-pass")
    assert code == 0 and outcome(document, "run:echo-pass#0") == "reused"
    assert document["results"][0]["status"] == "PASS"


def test_editing_run_inputs_reruns_run_not_image_and_dockerfile_rebuilds(
    copy_dataset, capsys
) -> None:
    dataset = copy_dataset(RUNCASES)
    run_json(capsys, str(dataset), "--task", "echo-pass")
    solve = dataset / "tasks/echo-pass/solution/solve.sh"
    solve.write_text(solve.read_text() + "# changed\n")
    _, document = run_json(capsys, str(dataset), "--task", "echo-pass")
    assert outcome(document, "image:echo-pass") == "reused"
    assert outcome(document, "run:echo-pass#0") == "computed"
    dockerfile = dataset / "tasks/echo-pass/environment/Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "RUN echo rebuilt > /rebuilt\n")
    _, document = run_json(capsys, str(dataset), "--task", "echo-pass")
    assert outcome(document, "image:echo-pass") == "computed"
    assert document["results"][0]["status"] == "PASS"


def test_fresh_makes_new_samples(copy_dataset, capsys) -> None:
    dataset = copy_dataset(RUNCASES)
    _, first = run_json(capsys, str(dataset), "--task", "echo-pass")
    _, fresh = run_json(capsys, str(dataset), "--task", "echo-pass", "--fresh")
    assert outcome(fresh, "run:echo-pass#0") == "computed"
    assert fresh["results"][0]["attempt_id"] != first["results"][0]["attempt_id"]
    _, again = run_json(capsys, str(dataset), "--task", "echo-pass")
    assert again["counts"]["computed"] == 0


def test_exhausted_invocation_quota_is_recorded_and_still_scored(copy_dataset, capsys) -> None:
    dataset = copy_dataset(RUNCASES)
    code, document = run_json(capsys, str(dataset), "--task", "quota")
    result = document["results"][0]
    assert code == 0
    assert result["limit"] == "agent_invocations"
    assert result["status"] == "PASS", result
    assert result["details"]["limit"] == "agent_invocations"


def test_wall_time_ends_the_run_stage_and_the_evaluator_still_scores(copy_dataset, capsys) -> None:
    dataset = copy_dataset(RUNCASES)
    started = time.monotonic()
    code, document = run_json(capsys, str(dataset), "--task", "slow-run")
    assert time.monotonic() - started < 25
    result = document["results"][0]
    assert code == 0 and result["limit"] == "wall_time_seconds"
    assert result["status"] == "PASS", result


@pytest.mark.parametrize(
    ("task", "code", "stage"),
    [
        ("bad-status", "evaluator_error", "evaluate"),
        ("raising", "evaluator_error", "evaluate"),
        ("slow-eval", "evaluate_timeout", "evaluate"),
        ("setup-fails", "setup_failed", "environment"),
    ],
)
def test_failures_are_error_results_with_codes(copy_dataset, capsys, task, code, stage) -> None:
    dataset = copy_dataset(RUNCASES)
    exit_code, document = run_json(capsys, str(dataset), "--task", task)
    result = document["results"][0]
    assert exit_code == 1
    assert result["status"] == "ERROR"
    assert result["error"]["code"] == code and result["error"]["stage"] == stage
    assert (dataset / ".ageval/runs" / result["attempt_id"] / "result.json").is_file()


def test_an_evaluator_run_by_exec_is_stopped_at_its_limit_by_ageval(copy_dataset, capsys) -> None:
    """With evaluate_host's user, the runner runs by an exec (not as the container's main
    process), with no `timeout` of the image's: evaluate_seconds (2) is kept on ageval's side,
    which kills the scoring container, and the evaluation is evaluate_timeout, not a lost
    container."""
    dataset = copy_dataset(RUNCASES)
    profiles = yaml.safe_load((dataset / "profiles.yaml").read_text())
    profiles["evaluate_host"] = {"environment_options": {"user": "4321"}}
    (dataset / "profiles.yaml").write_text(yaml.safe_dump(profiles))
    exit_code, document = run_json(capsys, str(dataset), "--task", "slow-eval")
    result = document["results"][0]
    assert exit_code == 1 and result["status"] == "ERROR", result
    assert result["error"]["code"] == "evaluate_timeout", result["error"]
    assert "evaluate_seconds" in result["error"]["message"], result["error"]


def test_no_container_is_left_behind(copy_dataset, capsys) -> None:
    dataset = copy_dataset(RUNCASES)
    run_json(capsys, str(dataset), "--task", "setup-fails", "--task", "echo-pass")
    mine = {"label": f"ageval.session={SESSION}"}
    assert client().containers.list(all=True, filters=mine) == []


@pytest.mark.parametrize("task", ["sidecar", "shared-net"])
def test_compose_sidecars_are_reachable_and_removed(copy_dataset, capsys, task) -> None:
    dataset = copy_dataset(RUNCASES)
    code, document = run_json(capsys, str(dataset), "--task", task)
    result = document["results"][0]
    assert code == 0 and result["status"] == "PASS", result
    # What this process made (the run is in-process): other workers' projects may be up.
    mine = [f"{name}={value}" for name, value in owner_labels().items()]
    networks = client().networks.list(filters={"name": "ageval-", "label": mine})
    assert not [n for n in networks if n.name.endswith("_default")]
    compose = client().containers.list(
        all=True, filters={"label": ["com.docker.compose.project", *mine]}
    )
    assert compose == []
