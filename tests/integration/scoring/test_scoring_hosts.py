"""Scoring hosts: `evaluate_host.isolated`, `evaluation.collect`, the scoring host's options
and the official CPython image of its python_version, end to end on the real Docker engine."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from agevalx.cli import main
from agevalx.environments.container import SESSION
from agevalx.environments.engine import client, image_exists
from tests.integration.run.test_run_oracle import containers_created_since

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
DATASET = ROOT / "tests/integration/data/scoring-hosts"
TEST_PYTHON = "3.91"
"""A python_version no registry has: the tests make its `python:<minor>-slim` image here."""
MARKER = "/etc/ageval-test-python"


@pytest.fixture(scope="module")
def python_image(docker_engine: object) -> Iterator[str]:
    """A local image tagged as the official CPython image of TEST_PYTHON (the base image's
    python3 with a marker file), removed afterwards."""
    reference = f"python:{TEST_PYTHON}-slim"
    dockerfile = f"FROM ageval/base:bookworm\nRUN echo {TEST_PYTHON} > {MARKER}\n"
    client().images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=reference, rm=True)
    yield reference
    client().images.remove(reference, force=True)


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["run", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def with_host(dataset: Path, evaluate_host: dict[str, Any], **options: Any) -> Path:
    """Set profiles.yaml's evaluate_host (and environment_options) in a copied dataset."""
    path = dataset / "profiles.yaml"
    profiles = yaml.safe_load(path.read_text())
    profiles["evaluate_host"] = evaluate_host
    profiles["environment_options"].update(options)
    path.write_text(yaml.safe_dump(profiles))
    return dataset


def isolated(**options: Any) -> dict[str, Any]:
    return {"isolated": True, "environment_options": {"python_version": TEST_PYTHON, **options}}


def only_result(document: dict[str, Any]) -> dict[str, Any]:
    [result] = document["results"]
    return dict(result)


def test_an_isolated_host_sees_the_workspace_but_not_what_the_agent_left_in_root(
    copy_dataset, capsys, python_image
) -> None:
    dataset = with_host(copy_dataset(DATASET), isolated())
    code, document = run_json(capsys, str(dataset), "--task", "leftovers")
    result = only_result(document)
    assert code == 0 and result["status"] == "PASS", json.dumps(document["nodes"])
    assert result["details"]["answer"] == "forty-two"
    assert result["details"]["sees_root_leftover"] is False
    assert result["details"]["host_marker"] == TEST_PYTHON  # scored in python:<minor>-slim
    nodes = {item["id"]: item for item in document["nodes"]}
    assert nodes["scoring_host:leftovers"]["outcome"] == "computed"


def test_without_isolation_the_evaluator_scores_in_the_attempt_filesystem(
    copy_dataset, capsys
) -> None:
    dataset = copy_dataset(DATASET)
    code, document = run_json(capsys, str(dataset), "--task", "leftovers")
    result = only_result(document)
    assert code == 0 and result["status"] == "PASS", json.dumps(document["nodes"])
    assert result["details"]["sees_root_leftover"] is True
    assert result["details"]["host_marker"] is None
    assert not [item for item in document["nodes"] if item["id"].startswith("scoring_host:")]


def test_a_missing_python_image_fails_once_with_a_code_and_no_fallback(
    copy_dataset, capsys
) -> None:
    assert not image_exists("python:3.97-slim")
    dataset = with_host(copy_dataset(DATASET), isolated(python_version="3.97"))
    code, document = run_json(capsys, str(dataset), "--task", "leftovers", "-k", "2")
    assert code != 0
    assert [result["error"]["code"] for result in document["results"]] == [
        "python_image_unavailable"
    ] * 2
    failed = [item for item in document["nodes"] if item.get("error")]
    assert [item["id"] for item in failed] == ["scoring_host:leftovers"], failed
    error = failed[0]["error"]
    assert error["code"] == "python_image_unavailable"
    assert "python:3.97-slim" in error["message"] and "docker load" in error["hint"]


@pytest.mark.parametrize("host", ["attempt", "isolated"])
def test_collected_paths_reach_the_scoring_host_from_the_attempt_and_a_service(
    copy_dataset, capsys, python_image, host
) -> None:
    dataset = copy_dataset(DATASET)
    if host == "isolated":
        with_host(dataset, isolated())
    code, document = run_json(capsys, str(dataset), "--task", "collects")
    result = only_result(document)
    assert code == 0 and result["status"] == "PASS", json.dumps(document["nodes"])
    assert result["details"] == {"summary": "FORTY-TWO", "sidecar": "from the sidecar"}
    mine = {"label": f"ageval.session={SESSION}"}
    assert client().containers.list(all=True, filters=mine) == []


def test_editing_the_evaluator_rescores_from_the_collected_tree(copy_dataset, capsys) -> None:
    dataset = copy_dataset(DATASET)
    run_json(capsys, str(dataset), "--task", "collects")
    evaluator = dataset / "tasks/collects/evaluator.py"
    evaluator.write_text(evaluator.read_text().replace('"PASS" if ok', '"FAIL" if ok'))
    _, document = run_json(capsys, str(dataset), "--task", "collects")
    outcomes = {item["id"]: item["outcome"] for item in document["nodes"]}
    assert outcomes["run:collects#0"] == "reused"
    result = only_result(document)
    assert result["status"] == "FAIL"
    assert result["details"] == {"summary": "FORTY-TWO", "sidecar": "from the sidecar"}


@pytest.mark.parametrize(
    ("entry", "code"),
    [
        ({"path": "/var/result/out.txt", "command": "exit 3"}, "collect_command_failed"),
        (
            {"path": "/var/result/out.txt", "command": "sleep 30", "timeout_sec": 1},
            "collect_timeout",
        ),
        ({"path": "/var/result/never-written.txt"}, "collect_path_missing"),
        ({"path": "/srv/data", "service": "nowhere"}, "collect_service_missing"),
    ],
)
def test_a_collect_entry_that_fails_makes_the_evaluation_an_error_naming_it(
    copy_dataset, capsys, entry, code
) -> None:
    dataset = copy_dataset(DATASET)
    task_file = dataset / "tasks/collect-fails/task.yaml"
    task = yaml.safe_load(task_file.read_text())
    task["evaluation"]["collect"][1] = entry
    task_file.write_text(yaml.safe_dump(task))
    exit_code, document = run_json(capsys, str(dataset), "--task", "collect-fails")
    result = only_result(document)
    assert exit_code == 1 and result["status"] == "ERROR", result
    assert result["error"]["code"] == code and result["error"]["stage"] == "evaluate"
    assert "evaluation.collect[1]" in result["error"]["message"]
    assert entry["path"] in result["error"]["message"]


def test_the_scoring_host_runs_as_its_user_without_network_under_egress_none(
    copy_dataset, capsys, python_image
) -> None:
    dataset = with_host(copy_dataset(DATASET), isolated(user="1234", egress="none"))
    code, document = run_json(capsys, str(dataset), "--task", "whoami")
    result = only_result(document)
    assert code == 0 and result["status"] == "PASS", json.dumps(document["nodes"])
    assert result["details"]["uid"] == 1234
    assert result["details"]["interfaces"] == ["lo"]
    assert result["details"]["reads_workspace"] == "forty-two"


def test_the_evaluator_in_the_attempt_image_runs_as_evaluate_hosts_user(
    copy_dataset, capsys
) -> None:
    host = {"environment_options": {"user": "4321"}}
    dataset = with_host(copy_dataset(DATASET), host)
    code, document = run_json(capsys, str(dataset), "--task", "whoami")
    result = only_result(document)
    assert code == 0 and result["status"] == "PASS", json.dumps(document["nodes"])
    assert result["details"]["uid"] == 4321


def test_an_isolated_host_never_inherits_the_agents_network(
    copy_dataset, capsys, python_image
) -> None:
    dataset = with_host(copy_dataset(DATASET), isolated(), egress="none")  # agent: network none
    code, document = run_json(capsys, str(dataset), "--task", "whoami")
    result = only_result(document)
    assert code == 0 and result["status"] == "PASS", json.dumps(document["nodes"])
    assert result["details"]["interfaces"] != ["lo"]


def with_params(dataset: Path, use: list[str]) -> Path:
    path = dataset / "tasks/named-hosts/task.yaml"
    task = yaml.safe_load(path.read_text())
    task["parameters"]["use"] = use
    path.write_text(yaml.safe_dump(task))
    return dataset


def test_the_evaluator_reaches_a_named_scoring_host_started_on_first_use(
    copy_dataset, capsys, python_image, standby_on
) -> None:
    # the count below holds the placeholder
    dataset = with_host(copy_dataset(DATASET), isolated())
    started = time.time()
    code, document = run_json(capsys, str(dataset), "--task", "named-hosts")
    result = only_result(document)
    assert code == 0 and result["status"] == "PASS", json.dumps(result)
    assert result["details"] == {
        "db": ["up", "0"],
        "seeded": "seeded by the db image",
        "echoed": "forty-two",
        "exit_code": 7,
        "missing": "FileNotFoundError",
    }
    assert "a print of the evaluator" in result["evaluator_output"]
    # attempt, the scoring host's network namespace (started during the run), scoring host, db
    assert containers_created_since(started) == 4
    assert client().containers.list(all=True, filters={"label": f"ageval.session={SESSION}"}) == []


def test_a_scoring_host_nobody_asks_for_is_never_started(
    copy_dataset, capsys, python_image, standby_on
):  # the placeholder is counted, as above
    dataset = with_params(with_host(copy_dataset(DATASET), isolated()), [])
    started = time.time()
    code, document = run_json(capsys, str(dataset), "--task", "named-hosts")
    assert code == 0 and only_result(document)["status"] == "PASS"
    # attempt, the scoring host's network namespace (started during the run), scoring host
    assert containers_created_since(started) == 3


def test_a_scoring_host_without_an_image_makes_the_evaluation_an_error(
    copy_dataset, capsys, python_image
) -> None:
    dataset = with_params(with_host(copy_dataset(DATASET), isolated()), ["plain", "broken"])
    code, document = run_json(capsys, str(dataset), "--task", "named-hosts")
    result = only_result(document)
    assert code == 1 and result["status"] == "ERROR", result
    assert result["error"]["code"] == "scoring_host_unavailable"
    assert "ageval/no-such-image:never" in result["error"]["message"]
    assert client().containers.list(all=True, filters={"label": f"ageval.session={SESSION}"}) == []


def test_egress_llm_on_the_scoring_host_lets_out_only_the_allowed_hosts(
    copy_dataset, capsys, egress_outside
) -> None:
    outside = egress_outside
    options = {"network": outside["network"], "egress": "llm", "egress_allow": [outside["allowed"]]}
    dataset = with_host(copy_dataset(DATASET), {"environment_options": options})
    targets = {name: outside[name] for name in ("allowed", "denied", "denied_ip")}
    (dataset / "tasks/egress-probe/targets.json").write_text(json.dumps(targets))
    code, document = run_json(capsys, str(dataset), "--task", "egress-probe")
    assert "results" in document, document
    result = only_result(document)
    assert code == 0 and result["status"] == "PASS", json.dumps(document["nodes"])
    details = result["details"]
    assert details["allowed"] == 200, details
    assert details["denied"] == 403 and details["denied_ip"] == 403, details
    assert details["denied_direct"] not in (200, 403), details  # no route around the proxy


@pytest.mark.parametrize("user", [None, "4321"], ids=["root", "evaluate_host-user"])
def test_programs_the_agent_replaced_in_its_image_never_run_while_it_is_scored(
    copy_dataset, capsys, user
) -> None:
    """The forger task's agent answers wrong, then replaces `timeout`, `sleep`, `chown`, `rm`
    and `mkdir` in its container (committed, then scored): each logs that it ran, and the fake
    `timeout` writes a PASS where the runner's result goes. Its `evaluation.collect` entry
    makes the evaluator run by exec, after the collected copy is placed (as root, or after
    the files are given to evaluate_host's user): still nothing of the image's runs, and the
    evaluator's FAIL stands."""
    dataset = copy_dataset(DATASET)
    if user is not None:
        dataset = with_host(dataset, {"environment_options": {"user": user}})
    code, document = run_json(capsys, str(dataset), "--task", "forger")
    result = only_result(document)
    assert result["status"] == "FAIL", json.dumps(document["nodes"])
    assert result["details"] == {"planted_ran_here": [], "collected": "wrong"}, result
    assert code == 0
