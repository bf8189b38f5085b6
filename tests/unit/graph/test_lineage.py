"""Lineage: fork and replay branches are recorded beside the dataset and drawn by graph show."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agevalx.cache.manifest import ActionManifest, OutputRef
from agevalx.cache.store import CacheStore
from agevalx.cli import main
from agevalx.graph.nodes import Node
from agevalx.operations.lineage import (
    BRANCHES_DIR,
    Branch,
    BranchView,
    branches,
    fork_branch,
    lineage,
    record_branch,
    recorded_branches,
)
from agevalx.operations.planning import PlanRequest, plan
from agevalx.runner.activity import ActivityRecord

pytestmark = pytest.mark.unit

SOURCE_RUN = "a" * 32
CHECKPOINT = "c" * 32
FORK_KEY = "f" * 32


def _source_attempt(dataset: Path, attempt: str, run_key: str) -> None:
    directory = dataset / ".ageval/runs" / attempt
    directory.mkdir(parents=True)
    nodes = [{"id": "run:alpha#0", "kind": "run", "key": run_key, "outcome": "computed"}]
    (directory / "result.json").write_text(json.dumps({"task_id": "alpha", "nodes": nodes}))


def _fork_node(source: str) -> Node:
    checkpoint = ActivityRecord(
        seq=4, time="t", type="checkpoint", invocation=1, detail={"key": CHECKPOINT}
    )
    return Node(
        id="run:alpha#0",
        kind="run",
        key=FORK_KEY,
        inputs={"lock_fields": {"binding.roles": {"solver": {"model": {"id": "model-2"}}}}},
        parents={"image": ["1" * 32]},
        status="miss",
        task_id="alpha",
        attempt=0,
        payload={"fork": {"source": source, "checkpoint": CHECKPOINT, "records": [checkpoint]}},
    )


def _branch(**fields: Any) -> Branch:
    values: dict[str, Any] = {
        "kind": "replay",
        "id": "alpha-replay-000000000000",
        "node": "replay:alpha",
        "key": "0" * 32,
        "task_id": "alpha",
        "source_attempt": "alpha-0-aaaaaaaaaaaa",
        "checkpoint_seq": 4,
        "checkpoint_key": CHECKPOINT,
        "parent_run_key": SOURCE_RUN,
        **fields,
    }
    return Branch.model_validate(values)


def _fork(**fields: Any) -> Branch:
    return _branch(
        kind="fork", node="run:alpha#0", id="alpha-0-ffffffffffff", key=FORK_KEY, **fields
    )


def _view(branch: Branch) -> BranchView:
    return BranchView(**branch.model_dump(), status="miss")


def _cache_action(store: CacheStore, kind: str, key: str) -> None:
    output = OutputRef(digest=store.put_bytes(key.encode()), type="blob")
    store.put_action(ActionManifest.create(kind, key, {"out": output}))


def test_recording_a_forked_run_node_records_its_branch(dataset: Path) -> None:
    _source_attempt(dataset, "alpha-0-aaaaaaaaaaaa", SOURCE_RUN)
    branch = fork_branch(dataset, _fork_node("alpha-0-aaaaaaaaaaaa"))
    assert branch is not None
    record_branch(dataset, branch)
    [fork] = recorded_branches(dataset)
    assert fork == Branch(
        kind="fork",
        id=f"alpha-0-{FORK_KEY[:12]}",
        node="run:alpha#0",
        key=FORK_KEY,
        task_id="alpha",
        source_attempt="alpha-0-aaaaaaaaaaaa",
        checkpoint_seq=4,
        checkpoint_key=CHECKPOINT,
        parent_run_key=SOURCE_RUN,
        models={"solver": "model-2"},
    )


def test_an_ordinary_run_node_is_no_branch(dataset: Path) -> None:
    node = _fork_node("alpha-0-aaaaaaaaaaaa")
    node.payload = {}
    assert fork_branch(dataset, node) is None


def test_recording_the_same_branch_twice_keeps_one_record(dataset: Path) -> None:
    record_branch(dataset, _branch())
    record_branch(dataset, _branch())
    assert len(list((dataset / BRANCHES_DIR).iterdir())) == 1


def test_a_damaged_branch_record_is_skipped(dataset: Path) -> None:
    record_branch(dataset, _branch())
    (dataset / BRANCHES_DIR / "replay-broken.json").write_text("{not json")
    assert [b.id for b in recorded_branches(dataset)] == ["alpha-replay-000000000000"]


def test_branches_keep_planned_tasks_and_name_cache_status_and_planned_source(
    dataset: Path, store: CacheStore
) -> None:
    planned = plan(PlanRequest(dataset=dataset, tasks=("alpha",)), store)
    run_key = planned.node("run:alpha#0").key
    record_branch(dataset, _branch(parent_run_key=run_key))
    record_branch(dataset, _fork())
    record_branch(dataset, _branch(task_id="beta", id="beta-replay-1", key="b" * 32))
    _cache_action(store, "run", FORK_KEY)
    views = branches(dataset, planned.task_ids, planned.nodes(), store)
    assert [(v.kind, v.status, v.parent_node) for v in views] == [
        ("fork", "hit", None),
        ("replay", "miss", "run:alpha#0"),
    ]


def test_lineage_hangs_branches_of_a_branch_under_it() -> None:
    fork = _fork()
    replay_of_fork = _branch(source_attempt=fork.id, key="e" * 32, id="alpha-replay-eeeeeeeeeeee")
    replay = _branch()
    found = lineage([_view(b) for b in (fork, replay_of_fork, replay)])
    assert found.roots == ["alpha-0-aaaaaaaaaaaa"]
    assert [v.id for v in found.children["alpha-0-aaaaaaaaaaaa"]] == [fork.id, replay.id]
    assert [v.id for v in found.children[fork.id]] == [replay_of_fork.id]
    assert found.source("alpha-0-aaaaaaaaaaaa").parent_run_key == SOURCE_RUN


def test_graph_show_lists_and_draws_the_branches(
    dataset: Path, store: CacheStore, capsys: pytest.CaptureFixture[str]
) -> None:
    record_branch(
        dataset,
        _fork(models={"solver": "m-2"}),
    )
    record_branch(dataset, _branch(evaluate=True))
    show = ["graph", "show", str(dataset), "--task", "alpha", "--cache-dir", str(store.root)]
    assert main([*show, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [
        (b["kind"], b["checkpoint_key"], b["source_attempt"]) for b in document["branches"]
    ] == [
        ("fork", CHECKPOINT, "alpha-0-aaaaaaaaaaaa"),
        ("replay", CHECKPOINT, "alpha-0-aaaaaaaaaaaa"),
    ]
    assert main(show) == 0
    text = capsys.readouterr().out
    drawn = text[text.index("branches") :]
    assert "run:alpha alpha-0-aaaaaaaaaaaa (key aaaaaaaaaaaa…)" in drawn
    assert (
        "checkpoint 4 (cccccccccccc…) ─▶ fork run:alpha#0 alpha-0-ffffffffffff "
        "(key ffffffffffff…, model m-2) miss" in drawn
    )
    assert "─▶ replay alpha-replay-000000000000 (key 000000000000…, evaluate) miss" in drawn


def test_graph_show_without_branches_prints_no_branch_section(
    dataset: Path, store: CacheStore, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["graph", "show", str(dataset), "--cache-dir", str(store.root)]) == 0
    assert "branches" not in capsys.readouterr().out
    assert main(["graph", "show", str(dataset), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["branches"] == []
