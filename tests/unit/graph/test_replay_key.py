"""The replay node's key: its source run, last checkpoint, recorded actions and --evaluate."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from agevalx.cache.store import CacheStore
from agevalx.graph.keys import node_key
from agevalx.graph.plan import Plan
from agevalx.graph.rules import load_rules
from agevalx.operations.planning import PlanRequest, plan
from agevalx.operations.replay import RecordedCommand, ReplaySource, replay_node
from agevalx.runner.activity import ActivityRecord

pytestmark = pytest.mark.unit


def _checkpoint(key: str, seq: int = 5) -> ActivityRecord:
    return ActivityRecord(seq=seq, time="t", type="checkpoint", detail={"key": key})


SOURCE = ReplaySource(
    attempt="alpha-0-aaaaaaaaaaaa",
    task="alpha",
    commands=[
        RecordedCommand(seq=1, command="ls", cwd="/attempt/workspace", exit_code=0, output="")
    ],
    run_key="a" * 32,
    checkpoint=_checkpoint("c" * 32),
)


@pytest.fixture
def planned(dataset: Path, store: CacheStore) -> Plan:
    return plan(PlanRequest(dataset=dataset, tasks=("alpha",), kinds=frozenset({"image"})), store)


def key(
    planned: Plan, store: CacheStore, source: ReplaySource = SOURCE, evaluate: bool = False
) -> str:
    return replay_node(planned, source, evaluate, store).key


def test_the_same_replay_has_the_same_key(planned: Plan, store: CacheStore) -> None:
    assert key(planned, store) == key(planned, store)


def test_the_key_is_the_rule_formula_over_inputs_and_parents(
    planned: Plan, store: CacheStore
) -> None:
    node = replay_node(planned, SOURCE, True, store)
    assert node.parents == {
        "image": [planned.node("image:alpha").key],
        "run": ["a" * 32],
        "checkpoint": ["c" * 32],
    }
    assert node.inputs["request"] == {
        "replay": {"source": SOURCE.attempt, "actions": SOURCE.actions_digest()},
        "evaluate": True,
    }
    assert set(node.inputs) == {"task_files", "lock_fields", "request", "package"}
    assert node.key == node_key(load_rules()["replay"], node.inputs, node.parents)
    assert (node.id, node.kind, node.status) == ("replay:alpha", "replay", "miss")


@pytest.mark.parametrize(
    "change",
    [
        {"run_key": "b" * 32},
        {"checkpoint": _checkpoint("d" * 32)},
        {"checkpoint": None},
        {"commands": []},
        {"attempt": "alpha-1-bbbbbbbbbbbb"},
    ],
    ids=["source-run", "checkpoint", "no-checkpoint", "actions", "source-attempt"],
)
def test_the_key_changes_with_the_source(planned: Plan, store: CacheStore, change: dict) -> None:  # type: ignore[type-arg]
    assert key(planned, store, dataclasses.replace(SOURCE, **change)) != key(planned, store)


def test_the_key_changes_with_evaluate(planned: Plan, store: CacheStore) -> None:
    assert key(planned, store, evaluate=True) != key(planned, store, evaluate=False)


def test_the_key_changes_with_the_evaluator_and_setup_but_not_the_description(
    dataset: Path, store: CacheStore
) -> None:
    def current() -> str:
        request = PlanRequest(dataset=dataset, tasks=("alpha",), kinds=frozenset({"image"}))
        return key(plan(request, store), store)

    before = current()
    (dataset / "tasks/alpha/task.yaml").write_text(
        (dataset / "tasks/alpha/task.yaml").read_text() + "description: changed\n"
    )
    assert current() == before
    (dataset / "tasks/alpha/evaluator.py").write_text("def evaluate(ctx):\n    return {}\n")
    assert current() != before


def test_a_checkpoint_seq_is_not_part_of_the_key(planned: Plan, store: CacheStore) -> None:
    moved = dataclasses.replace(SOURCE, checkpoint=_checkpoint("c" * 32, seq=9))
    assert key(planned, store, moved) == key(planned, store)


def test_the_planner_makes_no_replay_nodes(dataset: Path, store: CacheStore) -> None:
    planned = plan(PlanRequest(dataset=dataset, k=2), store)
    assert "replay" not in {node.kind for node in planned.nodes()}
