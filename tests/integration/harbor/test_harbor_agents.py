"""Agents on Harbor datasets, through the one attempt pipeline: binding, recording, recovery.

The scripted ACP agent plays the Harbor task's one role, bound by a `profiles.yaml` at the
dataset root, by `--profiles`, or by `--agent`. Its attempts get what every attempt gets: an
activity journal and transcript, checkpoints, `--resume` after kill -9, `--fork` and
`ageval replay`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agevalx.cli import main
from agevalx.environments.engine import client
from tests.integration.conftest import this_workers
from tests.integration.recovery.test_resume_faults import (
    agent_starts,
    attempt_dirs,
    records,
)

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
DATASET = ROOT / "tests/integration/data/harbor-agents"
DEMO = ROOT / "examples/datasets/harbor-demo"
SCRIPTED = ROOT / "examples/profiles/scripted.yaml"
AGEVAL = str(Path(sys.executable).with_name("ageval"))
TASK = "steps"
COMMANDS = [
    "echo one >> out.txt && sleep 0.6",
    "echo two >> out.txt && sleep 0.6",
    'echo three >> out.txt && echo "$STEPS_GREETING" > greeting.txt',
]


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main([*args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def terminal_commands(attempt: Path) -> list[tuple[str, str]]:
    activity = [json.loads(line) for line in (attempt / "activity.jsonl").read_text().splitlines()]
    created = [r for r in activity if r.get("detail", {}).get("method") == "terminal/create"]
    return [(r["command"], r["cwd"]) for r in created]


def test_a_profiles_file_at_the_dataset_root_binds_the_scripted_agent(
    copy_dataset: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = copy_dataset(DATASET)
    code, document = cli(capsys, "run", str(dataset))
    assert code == 0, document
    (result,) = document["results"]
    assert (result["status"], result["score"]) == ("PASS", 1.0), result
    assert result["agents"] == {"solver": "ageval-scripted-agent"}
    assert result["details"]["extra"]["eval_raw_data"]["rewards"] == {"reward": 1.0}
    attempt = dataset / ".ageval/runs" / result["attempt_id"]
    assert terminal_commands(attempt) == [(command, "/srv") for command in COMMANDS]
    transcript = (attempt / "transcript.jsonl").read_text()
    assert "Wrote out.txt." in transcript
    sent = json.loads(transcript.splitlines()[0])
    instruction = (DATASET / TASK / "instruction.md").read_text()
    assert (sent["type"], sent["role"], sent["invocation"]) == ("prompt", "solver", 0)
    assert sent["text"].startswith(instruction.strip()), sent
    lock = json.loads((dataset / ".ageval/locks/steps.lock.json").read_text())
    assert lock["task"]["format"] == "harbor"
    assert lock["binding"]["profiles_file"] == "profiles.yaml"


def test_the_readme_binds_a_profiles_file_to_every_harbor_demo_task(
    copy_dataset: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = copy_dataset(DEMO)
    code, document = cli(capsys, "run", str(dataset), "--profiles", str(SCRIPTED))
    assert code == 0, document
    found = {r["task_id"]: (r["status"], r["score"]) for r in document["results"]}
    assert found == {"hello": ("PASS", 1.0), "judge": ("FAIL", 0.0), "partial": ("DONE", 0.5)}
    hello = next(r for r in document["results"] if r["task_id"] == "hello")
    attempt = dataset / ".ageval/runs" / hello["attempt_id"]
    assert [command for command, _ in terminal_commands(attempt)] == [
        "echo 42 > /tmp/answer.txt && cat /tmp/answer.txt",
        "echo 'the answer is in /tmp/answer.txt' > /logs/artifacts/note.txt",
    ]
    assert (attempt / "artifacts/tmp/answer.txt").read_text() == "42\n"
    assert (attempt / "artifacts/logs/artifacts/note.txt").is_file()


def test_several_profiles_need_a_choice_and_agent_makes_it(
    copy_dataset: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = copy_dataset(DATASET)
    profiles = dataset / "profiles.yaml"
    profiles.write_text(profiles.read_text() + "  oracle-too:\n    executor: oracle\n")
    code, document = cli(capsys, "run", str(dataset))
    assert code == 2
    error = document["error"]
    assert error["code"] == "profile_choice_needed"
    assert "oracle-too, scripted" in error["message"] and "--agent" in error["hint"]

    code, document = cli(capsys, "run", str(dataset), "--agent", "oracle-too")
    assert code == 0, document
    assert document["results"][0]["agents"] == {"solver": "oracle"}

    elsewhere = dataset.parent / "two.yaml"
    profiles.rename(elsewhere)
    code, document = cli(capsys, "run", str(dataset), "--profiles", str(elsewhere))
    assert code == 2 and document["error"]["code"] == "profile_choice_needed"
    assert "keep one profile" in document["error"]["hint"]


def test_the_built_in_pi_needs_a_model(
    copy_dataset: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    code, document = cli(capsys, "run", str(copy_dataset(DATASET)), "--agent", "pi")
    assert code == 2
    assert (document["error"]["code"], document["error"]["field"]) == ("model_required", "--model")


# --- recovery --------------------------------------------------------------------------------


def _kill_when(dataset: Path, condition: Callable[[], bool], timeout: float = 120) -> int:
    process = subprocess.Popen(
        [AGEVAL, "run", str(dataset), "--task", TASK, "--fresh", "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + timeout
    try:
        while not condition():
            assert process.poll() is None, "the run finished before the fault point"
            assert time.monotonic() < deadline, "the fault point was never reached"
            time.sleep(0.05)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    return process.pid


def _verifying(dataset: Path) -> bool:
    for directory in attempt_dirs(dataset):
        labels = this_workers(f"ageval.attempt={directory.name}", "ageval=scoring")
        if client().containers.list(sparse=True, filters={"label": labels}):
            return True
    return False


FAULTS: dict[str, tuple[Callable[[Path], bool], int]] = {
    # name: (when to kill, scripted agent processes expected in all)
    "during the agent": (lambda d: any(r["type"] == "terminal" for r in records(d)), 2),
    "during the verifier": (_verifying, 1),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_killed_harbor_attempt_resumes_to_the_uninterrupted_result(
    copy_dataset: Any, capsys: pytest.CaptureFixture[str], fault: str
) -> None:
    dataset = copy_dataset(DATASET)
    condition, expected_starts = FAULTS[fault]
    started = time.time()
    killed = _kill_when(dataset, lambda: condition(dataset))
    [directory] = attempt_dirs(dataset)
    assert not (directory / "result.json").exists()
    code, document = cli(capsys, "run", str(dataset), "--task", TASK, "--resume", directory.name)
    assert code == 0, document
    (result,) = document["results"]
    assert result["attempt_id"] == directory.name
    assert (result["status"], result["score"]) == ("PASS", 1.0), result
    # a literal `[environment.env]` value is no secret (only `${VAR}` ones are masked)
    assert result["evaluator_output"] == "words: one two three ; greeting: from-task-env\n"
    invocations = [r for r in records(dataset) if r["type"] == "invocation"]
    assert [r["invocation"] for r in invocations] == [0]
    assert agent_starts(started, directory.name, {killed, os.getpid()}) == expected_starts
    labels = this_workers(f"ageval.attempt={directory.name}")
    assert client().containers.list(sparse=True, filters={"label": labels}) == []


def test_a_harbor_attempt_forks_and_replays_to_its_reward(
    copy_dataset: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = copy_dataset(DATASET)
    code, document = cli(capsys, "run", str(dataset), "--keep-recovery-state")
    assert code == 0, document
    source = document["results"][0]["attempt_id"]

    code, listed = cli(capsys, "checkpoints", str(dataset), "--run", source)
    assert code == 0, listed
    (point,) = listed["checkpoints"]
    args = ("--task", TASK, "--fork", source, "--checkpoint", str(point["seq"]), "--model", "m2")
    code, forked = cli(capsys, "run", str(dataset), *args)
    assert code == 0, forked
    (fork,) = forked["results"]
    assert fork["forked_from"] == {"attempt_id": source, "checkpoint": point["key"]}
    assert (fork["status"], fork["score"], fork["models"]) == ("PASS", 1.0, {"solver": "m2"})

    code, replayed = cli(capsys, "replay", str(dataset), "--run", source, "--evaluate")
    assert code == 0, replayed
    assert (replayed["status"], replayed["steps"]) == ("matched", len(COMMANDS))
    evaluation = replayed["evaluation"]
    assert (evaluation["status"], evaluation["score"]) == ("PASS", 1.0)
    assert evaluation["details"]["extra"]["eval_raw_data"]["rewards"] == {"reward": 1.0}
    code, again = cli(capsys, "replay", str(dataset), "--run", source, "--evaluate")
    assert code == 0 and again["outcome"] == "reused"


def test_a_replay_takes_the_job_config_its_source_ran_with_and_refuses_without_it(
    copy_dataset: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The job config's timeouts are in the task's lock: replayed without them, the agent
    would run under other limits than its source did, so the replay is refused."""
    dataset = copy_dataset(DATASET)
    job = ("--job-config", json.dumps({"agent_timeout_multiplier": 3}))
    code, document = cli(capsys, "run", str(dataset), *job, "--keep-recovery-state")
    assert code == 0, document
    source = document["results"][0]["attempt_id"]

    code, refused = cli(capsys, "replay", str(dataset), "--run", source, "--evaluate")
    assert code != 0 and refused["error"]["code"] == "replay_lock_differs", refused
    assert "--job-config" in refused["error"]["hint"]
    assert sorted(p.name for p in (dataset / ".ageval" / "runs").iterdir()) == [source]

    code, replayed = cli(capsys, "replay", str(dataset), "--run", source, *job, "--evaluate")
    assert code == 0, replayed
    assert (replayed["status"], replayed["steps"]) == ("matched", len(COMMANDS))
    assert (replayed["evaluation"]["status"], replayed["evaluation"]["score"]) == ("PASS", 1.0)
