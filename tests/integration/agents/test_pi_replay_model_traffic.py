"""`ageval replay --model-traffic`: pi re-run with the gateway answering from model.jsonl.

The source attempt runs pi against the mock model server; the replays run with the mock
server stopped (nothing listens on its port any more), so every answer the agent gets comes
from the recording.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agevalx.agents import bundles
from agevalx.agents.mockllm import MockLLM
from agevalx.cli import main
from agevalx.operations.replay import _recorded_commands
from agevalx.runner.activity import ActivityJournal
from tests.integration.agents.test_pi import (  # noqa: F401  (fixtures)
    bundles_env,
    pi_bundle,
    pi_bundles_dir,
    secret,
)
from tests.integration.agents.test_pi_gateway import _dataset

SCRIPT = [
    {"tool_call": {"name": "bash", "arguments": {"command": "echo made-by-pi > pi.txt"}}},
    {"tool_call": {"name": "bash", "arguments": {"command": "cat pi.txt; ls"}}},
    {"message": "I wrote pi.txt."},
]


def _source(copy_dataset: Any, capsys: pytest.CaptureFixture[str]) -> tuple[Path, dict[str, Any]]:
    with MockLLM(SCRIPT) as model:
        dataset = _dataset(copy_dataset, model.port)
        code = main(["run", str(dataset), "--keep-recovery-state", "--json"])
        (result,) = json.loads(capsys.readouterr().out)["results"]
        assert code == 0 and result["status"] == "PASS", result
        assert len(model.completions) == 3
    return dataset, result


def _replay(dataset: Path, attempt: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    command = ["replay", str(dataset), "--run", attempt, "--model-traffic", "--evaluate"]
    assert main([*command, "--fresh", "--json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


def _commands(directory: Path) -> list[tuple[str, int | None, str | None]]:
    records = ActivityJournal(directory / "activity.jsonl").read()
    return [(c.command, c.exit_code, c.output) for c in _recorded_commands(records)]


@pytest.mark.integration
@pytest.mark.slow
def test_a_model_traffic_replay_reproduces_the_actions_and_the_reward_without_a_model(
    copy_dataset: Any,
    capsys: pytest.CaptureFixture[str],
    bundles_env: bundles.Bundle,  # noqa: F811
    secret: str,  # noqa: F811
) -> None:
    dataset, result = _source(copy_dataset, capsys)
    source = dataset / ".ageval/runs" / result["attempt_id"]
    replayed = _replay(dataset, result["attempt_id"], capsys)
    assert replayed["model_traffic"] is True
    assert replayed["model_divergence"] is None, replayed
    assert replayed["model_requests"] == 3
    assert (replayed["status"], replayed["divergences"]) == ("matched", 0), replayed
    assert replayed["evaluation"]["status"] == result["status"] == "PASS"
    assert replayed["evaluation"]["score"] == result["score"]
    evidence = Path(replayed["evidence"])
    actions = _commands(evidence)
    assert [command for command, _, _ in actions][:2] == [
        "echo made-by-pi > pi.txt",
        "cat pi.txt; ls",
    ]
    assert actions == _commands(source)
    assert replayed["steps"] == len(actions)
    recorded = [json.loads(line) for line in (source / "model.jsonl").read_text().splitlines()]
    again = [json.loads(line) for line in (evidence / "model.jsonl").read_text().splitlines()]
    assert [t["response"] for t in again] == [t["response"] for t in recorded]
    assert all(t["streamed"] for t in again), "streamed responses are replayed as streams"
    (evidence / "model.jsonl").unlink()
    command = ["replay", str(dataset), "--run", result["attempt_id"], "--model-traffic"]
    assert main([*command, "--evaluate", "--json"]) == 0
    reused = json.loads(capsys.readouterr().out)
    assert (reused["outcome"], reused["key"]) == ("reused", replayed["key"])
    assert [json.loads(line) for line in (evidence / "model.jsonl").read_text().splitlines()] == (
        again
    ), "the view is written from the replay node's `model` output"


@pytest.mark.integration
@pytest.mark.slow
def test_an_altered_recording_is_reported_as_the_divergence_at_its_index(
    copy_dataset: Any,
    capsys: pytest.CaptureFixture[str],
    bundles_env: bundles.Bundle,  # noqa: F811
    secret: str,  # noqa: F811
) -> None:
    dataset, result = _source(copy_dataset, capsys)
    path = dataset / ".ageval/runs" / result["attempt_id"] / "model.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[1]["request"]["messages"][1]["content"][0]["text"] = "Something else entirely."
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    replayed = _replay(dataset, result["attempt_id"], capsys)
    divergence = replayed["model_divergence"]
    assert replayed["status"] == "diverged"
    assert divergence["code"] == "model_traffic_diverged"
    assert (divergence["role"], divergence["index"], divergence["source_seq"]) == ("solver", 1, 2)
    assert divergence["path"] == "/v1/chat/completions"
    assert divergence["difference"].startswith("/messages/1/content/0/text: ")
    assert "Something else entirely." in divergence["difference"]
    assert divergence["expected_digest"] != divergence["actual_digest"]
    assert replayed["model_requests"] == 1, "the first request was answered, the second not"
    # pi ran the first answer's command, then met the divergence: the second never ran
    first = replayed["first_divergence"]
    assert (first["step"], first["command"], first["actual_exit_code"]) == (
        1,
        "cat pi.txt; ls",
        -1,
    )
