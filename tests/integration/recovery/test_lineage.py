"""Fork and replay are branches of the graph: cached nodes hung under the source's checkpoints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agevalx.cli import main
from agevalx.graph.journal import last_recorded
from tests.integration.recovery.helpers import TASK, KeptAttempt, cli, fork

pytestmark = pytest.mark.integration


@pytest.fixture
def kept(kept_attempt: KeptAttempt) -> tuple[Path, str, str]:
    """A dataset with one sealed attempt that kept its cut points, and that attempt's run key."""
    return kept_attempt.dataset, kept_attempt.attempt_id, kept_attempt.run_key


def branches(capsys: pytest.CaptureFixture[str], dataset: Path) -> list[dict[str, Any]]:
    code, document = cli(capsys, "graph", "show", str(dataset), "--task", TASK)
    assert code == 0, document
    found: list[dict[str, Any]] = document["branches"]
    return found


def test_graph_show_lists_a_fork_under_its_source_checkpoint(kept, capsys) -> None:
    dataset, attempt, run_key = kept
    _, listing = cli(capsys, "checkpoints", str(dataset), "--run", attempt)
    second = listing["checkpoints"][1]
    code, document = fork(capsys, dataset, attempt, second["seq"], "mock-model-2")
    assert code == 0, document
    child = document["results"][0]
    fork_key = next(node["key"] for node in child["nodes"] if node["kind"] == "run")
    [branch] = branches(capsys, dataset)
    # The source keeps its identity's journal entry and lock view: explain compares with it.
    assert last_recorded(dataset, f"run:{TASK}#0")["key"] == run_key  # type: ignore[index]
    lock_view = json.loads((dataset / f".ageval/locks/{TASK}.lock.json").read_text())
    assert "mock-model-2" not in json.dumps(lock_view)
    assert branch == {
        "kind": "fork",
        "id": child["attempt_id"],
        "node": f"run:{TASK}#0",
        "key": fork_key,
        "task_id": TASK,
        "source_attempt": attempt,
        "checkpoint_seq": second["seq"],
        "checkpoint_key": second["key"],
        "parent_run_key": run_key,
        "models": {"stepper": "mock-model-2"},
        "evaluate": None,
        "status": "hit",
        "parent_node": f"run:{TASK}#0",  # the source run is the planned attempt 0
    }
    assert main(["graph", "show", str(dataset), "--task", TASK]) == 0
    drawn = capsys.readouterr().out
    assert f"run:{TASK}#0 {attempt} (key {run_key[:12]}…)" in drawn
    assert f"checkpoint {second['seq']} ({second['key'][:12]}…) ─▶ fork run:{TASK}#0" in drawn


def test_a_replay_is_a_cached_branch_reused_the_second_time(kept, capsys) -> None:
    dataset, attempt, run_key = kept
    source_result = dataset / ".ageval/runs" / attempt / "result.json"
    sealed = source_result.read_bytes()
    _, listing = cli(capsys, "checkpoints", str(dataset), "--run", attempt)
    last = listing["checkpoints"][-1]

    code, first = cli(capsys, "replay", str(dataset), "--run", attempt)
    assert code == 0, first
    assert first["outcome"] == "computed" and first["status"] == "matched"
    assert first["node"]["parents"]["run"] == [run_key]
    assert first["node"]["parents"]["checkpoint"] == [last["key"]]
    assert first["replay_id"] == f"{TASK}-replay-{first['key'][:12]}"
    evidence = Path(first["evidence"])
    (evidence / "replay.json").unlink()  # the view is rewritten from the cache

    code, second = cli(capsys, "replay", str(dataset), "--run", attempt)
    assert code == 0, second
    assert second["outcome"] == "reused"
    assert (second["key"], second["replay_id"]) == (first["key"], first["replay_id"])
    assert second["node"]["status"] == "hit"
    report_fields = set(first) - {"outcome", "node"}
    assert {k: second[k] for k in report_fields} == {k: first[k] for k in report_fields}
    view = json.loads((evidence / "replay.json").read_text())
    assert view["key"] == first["key"] and view["evidence"] == evidence.as_posix()
    assert (evidence / "activity.jsonl").read_text().count('"exec"') == first["steps"]
    assert source_result.read_bytes() == sealed  # the source attempt is unchanged

    code, again = cli(capsys, "replay", str(dataset), "--run", attempt, "--fresh")
    assert code == 0 and again["outcome"] == "computed" and again["key"] == first["key"]

    [replay] = branches(capsys, dataset)
    assert replay["kind"] == "replay" and replay["id"] == first["replay_id"]
    assert (replay["checkpoint_seq"], replay["checkpoint_key"]) == (last["seq"], last["key"])
    assert (replay["parent_run_key"], replay["status"]) == (run_key, "hit")
    assert replay["evaluate"] is False and replay["parent_node"] == f"run:{TASK}#0"


def test_replay_with_evaluate_is_another_branch(kept, capsys) -> None:
    dataset, attempt, _ = kept
    code, plain = cli(capsys, "replay", str(dataset), "--run", attempt)
    assert code == 0, plain
    code, scored = cli(capsys, "replay", str(dataset), "--run", attempt, "--evaluate")
    assert code == 0 and scored["outcome"] == "computed", scored
    assert scored["key"] != plain["key"] and scored["evaluation"]["status"] == "PASS"
    assert sorted(b["evaluate"] for b in branches(capsys, dataset)) == [False, True]
