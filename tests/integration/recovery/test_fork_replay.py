"""--keep-recovery-state, `ageval checkpoints`, --fork and `ageval replay` on the real engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.recovery.helpers import RUNCASES, TASK, KeptAttempt, cli, fork

pytestmark = pytest.mark.integration


@pytest.fixture
def kept(kept_attempt: KeptAttempt) -> tuple[Path, str]:
    return kept_attempt.dataset, kept_attempt.attempt_id


def test_checkpoints_lists_one_cut_point_per_invocation(kept, capsys) -> None:
    dataset, attempt = kept
    code, document = cli(capsys, "checkpoints", str(dataset), "--run", attempt)
    assert code == 0
    points = document["checkpoints"]
    assert [p["step"] for p in points] == [0, 1, 2]
    assert all(len(p["workspace"]) == 32 and p["bytes"] > 0 for p in points)


def test_checkpoints_of_an_attempt_without_recovery_state_is_a_coded_error(copy_dataset, capsys):
    dataset = copy_dataset(RUNCASES)
    _, document = cli(capsys, "run", str(dataset), "--task", TASK)
    attempt = document["results"][0]["attempt_id"]
    code, error = cli(capsys, "checkpoints", str(dataset), "--run", attempt)
    assert code == 1 and error["error"]["code"] == "no_recovery_state"


def test_fork_continues_from_a_cut_point_with_another_model(kept, capsys) -> None:
    dataset, attempt = kept
    _, listing = cli(capsys, "checkpoints", str(dataset), "--run", attempt)
    second = listing["checkpoints"][1]
    code, document = fork(capsys, dataset, attempt, second["seq"], "mock-model-2")
    assert code == 0, document
    child = document["results"][0]
    assert child["attempt_id"] != attempt
    assert child["status"] == "PASS"
    assert child["forked_from"] == {"attempt_id": attempt, "checkpoint": second["key"]}
    assert child["models"] == {"stepper": "mock-model-2"}
    assert document["summary"] is None  # a fork is not part of a job's pass@k
    runs = [n for n in document["nodes"] if n["kind"] == "run"]
    assert runs[0]["outcome"] == "computed"
    image = next(n for n in document["nodes"] if n["kind"] == "image")
    assert image["outcome"] == "reused"  # nothing upstream is recomputed
    source = dataset / ".ageval/runs" / attempt / "result.json"
    assert json.loads(source.read_text())["status"] == "PASS"  # the parent stays sealed
    activity = dataset / ".ageval/runs" / child["attempt_id"] / "activity.jsonl"
    records = [json.loads(line) for line in activity.read_text().splitlines()]
    invocations = [r for r in records if r["type"] == "invocation"]
    assert [r["invocation"] for r in invocations] == [0, 1, 2]


def test_fork_refuses_an_unknown_checkpoint(kept, capsys) -> None:
    dataset, attempt = kept
    code, document = cli(
        capsys,
        "run",
        str(dataset),
        "--task",
        TASK,
        "--fork",
        attempt,
        "--checkpoint",
        "999",
        "--model",
        "m",
    )
    assert code == 2 and document["error"]["code"] == "unknown_checkpoint"


def test_replay_reexecutes_terminal_actions_and_can_evaluate(kept, capsys) -> None:
    dataset, attempt = kept
    code, report = cli(capsys, "replay", str(dataset), "--run", attempt)
    assert code == 0
    assert report["source_attempt"] == attempt and report["steps"] == 6
    assert report["evaluation"] is None and report["counted_in_pass_at_k"] is False
    assert Path(report["evidence"], "replay.json").is_file()
    code, scored = cli(capsys, "replay", str(dataset), "--run", attempt, "--evaluate")
    assert code == 0 and scored["evaluation"]["status"] == "PASS"


def test_replay_reports_the_first_divergence(kept, capsys) -> None:
    dataset, attempt = kept
    activity = dataset / ".ageval/runs" / attempt / "activity.jsonl"
    records = [json.loads(line) for line in activity.read_text().splitlines()]
    target = next(r for r in records if r["type"] == "exec")
    target["exit_code"] = 7  # pretend the source saw a failure here
    activity.write_text("".join(json.dumps(r) + "\n" for r in records))
    code, report = cli(capsys, "replay", str(dataset), "--run", attempt)
    assert code == 0 and report["status"] == "diverged"
    first = report["first_divergence"]
    assert first["source_seq"] == target["seq"]
    assert (first["expected_exit_code"], first["actual_exit_code"]) == (7, 0)


def test_replay_and_fork_bind_as_the_source_did_without_its_profiles_file(
    copy_dataset, capsys, tmp_path: Path
) -> None:
    """Seed 002: a replay starts from the task's initial configuration and calls no model, so
    an attempt bound with `--profiles FILE` replays (and forks) without FILE named again."""
    dataset = copy_dataset(RUNCASES)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    bound = elsewhere / "bound.yaml"
    (dataset / "profiles.yaml").rename(bound)
    args = ("run", str(dataset), "--task", TASK, "--profiles", str(bound))
    code, document = cli(capsys, *args, "--keep-recovery-state")
    assert code == 0, document
    attempt = document["results"][0]["attempt_id"]
    kept = dataset / ".ageval/runs" / attempt / "profiles.yaml"
    assert kept.read_bytes() == bound.read_bytes()
    bound.unlink()  # nothing below may need it

    code, report = cli(capsys, "replay", str(dataset), "--run", attempt, "--evaluate")
    assert code == 0, report
    assert report["source_attempt"] == attempt and report["evaluation"]["status"] == "PASS"

    _, listing = cli(capsys, "checkpoints", str(dataset), "--run", attempt)
    code, forked = fork(capsys, dataset, attempt, listing["checkpoints"][1]["seq"], "mock-model-2")
    assert code == 0, forked
    assert forked["results"][0]["status"] == "PASS"
    image = next(n for n in forked["nodes"] if n["kind"] == "image")
    assert image["outcome"] == "reused"
