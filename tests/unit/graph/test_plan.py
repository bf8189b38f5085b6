"""Editing an input changes exactly the keys that depend on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agevalx.cache.store import CacheStore
from agevalx.errors import ConfigError, UsageError
from agevalx.lockfile import BindingRequest
from agevalx.operations.planning import PlanRequest, plan

pytestmark = pytest.mark.unit

ALPHA = "tasks/alpha"


def keys(dataset: Path, store: CacheStore, **request: object) -> dict[str, str]:
    planned = plan(PlanRequest(dataset=dataset, tasks=("alpha",), k=2, **request), store)  # type: ignore[arg-type]
    return {node.id: node.key for node in planned.nodes()}


def changed_after(
    dataset: Path, store: CacheStore, edit: str, text: str, append: bool = True
) -> set[str]:
    before = keys(dataset, store)
    path = dataset / edit
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text((path.read_text() if append and path.exists() else "") + text)
    after = keys(dataset, store)
    assert before.keys() == after.keys()
    return {name for name in before if before[name] != after[name]}


DOWNSTREAM_OF_RUN = {
    "run:alpha#0",
    "run:alpha#1",
    "evaluate:alpha#0",
    "evaluate:alpha#1",
    "summary:job",
}
EVALUATION = {"evaluate:alpha#0", "evaluate:alpha#1", "summary:job"}


def test_editing_evaluator_changes_only_lock_evaluate_and_summary(
    dataset: Path, store: CacheStore
) -> None:
    changed = changed_after(dataset, store, f"{ALPHA}/evaluator.py", "# tweak\n")
    assert changed == {"lock:alpha"} | EVALUATION


def test_adding_an_evaluation_file_changes_only_evaluation(
    dataset: Path, store: CacheStore
) -> None:
    changed = changed_after(dataset, store, f"{ALPHA}/evaluation/expected.json", "{}")
    assert changed == {"lock:alpha"} | EVALUATION


def test_editing_run_py_reruns_run_and_evaluate_not_image(dataset: Path, store: CacheStore) -> None:
    changed = changed_after(dataset, store, f"{ALPHA}/run.py", "# tweak\n")
    assert changed == {"lock:alpha"} | DOWNSTREAM_OF_RUN


def test_editing_a_prompt_reruns_run_and_evaluate(dataset: Path, store: CacheStore) -> None:
    changed = changed_after(dataset, store, f"{ALPHA}/prompts/task.md", "More detail.\n")
    assert changed == {"lock:alpha"} | DOWNSTREAM_OF_RUN


def test_editing_the_dockerfile_rebuilds_the_image_and_everything_after(
    dataset: Path, store: CacheStore
) -> None:
    changed = changed_after(dataset, store, f"{ALPHA}/environment/Dockerfile", "RUN true\n")
    assert changed == {"lock:alpha", "image:alpha"} | DOWNSTREAM_OF_RUN


def test_editing_evaluate_seconds_does_not_rerun_the_agent(
    dataset: Path, store: CacheStore
) -> None:
    path = dataset / ALPHA / "task.yaml"
    before = keys(dataset, store)
    path.write_text(path.read_text().replace("evaluate_seconds: 60", "evaluate_seconds: 90"))
    after = keys(dataset, store)
    assert {n for n in before if before[n] != after[n]} == {"lock:alpha"} | EVALUATION


def test_editing_the_description_changes_only_the_lock(dataset: Path, store: CacheStore) -> None:
    changed = changed_after(dataset, store, f"{ALPHA}/task.yaml", "description: words\n")
    assert changed == {"lock:alpha"}


def test_editing_wall_time_reruns_the_agent(dataset: Path, store: CacheStore) -> None:
    path = dataset / ALPHA / "task.yaml"
    before = keys(dataset, store)
    path.write_text(path.read_text().replace("limits: {", "limits: {wall_time_seconds: 30, "))
    after = keys(dataset, store)
    assert {n for n in before if before[n] != after[n]} == {"lock:alpha"} | DOWNSTREAM_OF_RUN


def test_changing_the_profile_model_reruns_the_agent(dataset: Path, store: CacheStore) -> None:
    path = dataset / "profiles.yaml"
    before = keys(dataset, store)
    path.write_text(path.read_text().replace("gpt-5.4-mini", "gpt-5.4"))
    after = keys(dataset, store)
    assert {n for n in before if before[n] != after[n]} == {"lock:alpha"} | DOWNSTREAM_OF_RUN


def test_editing_another_task_changes_no_key_of_this_one(dataset: Path, store: CacheStore) -> None:
    changed = changed_after(dataset, store, "tasks/beta/run.py", "def run(ctx):\n    pass\n")
    assert changed == set()


def test_raising_k_keeps_existing_attempt_keys(dataset: Path, store: CacheStore) -> None:
    two = keys(dataset, store)
    three = plan(PlanRequest(dataset=dataset, tasks=("alpha",), k=3), store)
    three_keys = {node.id: node.key for node in three.nodes()}
    for name in ("run:alpha#0", "run:alpha#1", "evaluate:alpha#0", "evaluate:alpha#1"):
        assert three_keys[name] == two[name]
    assert "run:alpha#2" in three_keys and three_keys["summary:job"] != two["summary:job"]


def test_attempts_are_distinct_nodes(dataset: Path, store: CacheStore) -> None:
    found = keys(dataset, store)
    assert found["run:alpha#0"] != found["run:alpha#1"]


def test_a_new_sample_changes_run_keys_only_downstream(dataset: Path, store: CacheStore) -> None:
    before = keys(dataset, store)
    after = keys(dataset, store, sample=1)
    assert {n for n in before if before[n] != after[n]} == DOWNSTREAM_OF_RUN


def test_agent_and_model_overrides_enter_run_keys(dataset: Path, store: CacheStore) -> None:
    before = keys(dataset, store)
    after = keys(dataset, store, binding=BindingRequest(agent="solver", model="gpt-5.4"))
    assert {"lock:alpha", "run:alpha#0", "evaluate:alpha#0"} <= {
        n for n in before if before[n] != after[n]
    }
    assert before["image:alpha"] == after["image:alpha"]


def test_keys_do_not_depend_on_where_the_dataset_lives(tmp_path: Path, store: CacheStore) -> None:
    from tests.unit.graph.conftest import write_dataset

    first = keys(write_dataset(tmp_path / "one"), store)
    second = keys(write_dataset(tmp_path / "two" / "nested"), store)
    assert first == second


def test_a_single_task_with_k1_has_no_summary(dataset: Path, store: CacheStore) -> None:
    planned = plan(PlanRequest(dataset=dataset, tasks=("alpha",)), store)
    assert [node.kind for node in planned.nodes()] == ["lock", "image", "run", "evaluate"]


def test_a_whole_dataset_has_a_summary_over_every_evaluate_node(
    dataset: Path, store: CacheStore
) -> None:
    planned = plan(PlanRequest(dataset=dataset), store)
    summary = planned.node("summary:job")
    assert len(summary.parents["evaluate"]) == 2
    assert set(planned.graph.predecessors("summary:job")) == {"evaluate:alpha#0", "evaluate:beta#0"}


def test_unknown_task_and_bad_binding_are_coded_errors(dataset: Path, store: CacheStore) -> None:
    with pytest.raises(ConfigError) as missing:
        plan(PlanRequest(dataset=dataset, tasks=("gamma",)), store)
    assert missing.value.code == "task_not_found"
    with pytest.raises(UsageError) as usage:
        plan(PlanRequest(dataset=dataset, binding=BindingRequest(model="m")), store)
    assert usage.value.code == "model_requires_agent"


def test_an_invalid_task_fails_planning_with_its_lock_error(
    dataset: Path, store: CacheStore
) -> None:
    (dataset / ALPHA / "task.yaml").write_text("format: ageval.task/1\ntask_id: wrong\n")
    with pytest.raises(ConfigError) as failure:
        plan(PlanRequest(dataset=dataset, tasks=("alpha",)), store)
    assert failure.value.code == "task_id_mismatch"


def test_the_plan_lists_nodes_and_edges_in_networkx_order(dataset: Path, store: CacheStore) -> None:
    """`graph show` lists the planner's own graph; its order is networkx's for the same graph."""
    import networkx as nx

    planned = plan(PlanRequest(dataset=dataset, k=3), store)
    listed = [node.id for node in planned.nodes()]
    edges = planned.edges()
    graph = planned.dag.to_networkx()
    assert listed == list(nx.topological_sort(graph))
    assert edges == list(graph.edges)
    assert [node.id for node in planned.nodes()] == listed  # the same once `graph` is made
    assert planned.graph.nodes["lock:alpha"]["node"] is planned.node("lock:alpha")


def test_parents_are_networkxs_predecessors_before_and_after_the_graph_is_made(
    dataset: Path, store: CacheStore
) -> None:
    planned = plan(PlanRequest(dataset=dataset, k=2), store)
    names = planned.node_ids()
    before = {name: planned.parents(name) for name in names}
    graph = planned.dag.to_networkx()
    assert before == {name: list(graph.predecessors(name)) for name in names}
    assert names == list(graph.nodes)
    assert any(len(parents) > 1 for parents in before.values())  # the summary's, at least
    planned.graph.add_edge("lock:alpha", "summary:job")  # once made, networkx's is the plan
    assert planned.parents("summary:job")[-1] == "lock:alpha"


def test_a_node_linked_after_a_parents_lookup_is_seen_by_the_next() -> None:
    from agevalx.graph.dag import NodeGraph
    from agevalx.graph.nodes import Node

    graph = NodeGraph()
    for name in ("a", "b", "c"):
        graph.add(Node(id=name, kind="lock", key=name, inputs={}, parents={}, status="miss"))
    graph.link("b", "c")
    assert graph.parents("c") == ["b"]
    graph.link("a", "c")  # a was added first: networkx lists it first
    assert graph.parents("c") == ["a", "b"]
    assert graph.parents("a") == []


def test_the_topological_order_follows_a_node_linked_or_added_after_it_was_asked() -> None:
    from agevalx.graph.dag import NodeGraph
    from agevalx.graph.nodes import Node

    def node(name: str) -> Node:
        return Node(id=name, kind="lock", key=name, inputs={}, parents={}, status="miss")

    graph = NodeGraph()
    for name in ("a", "b", "c"):
        graph.add(node(name))
    assert [n.id for n in graph.topological()] == ["a", "b", "c"]
    graph.link("c", "a")
    assert [n.id for n in graph.topological()] == ["b", "c", "a"]
    graph.add(node("d"))
    listed = graph.topological()
    listed.clear()  # each call's list is the caller's own
    assert [n.id for n in graph.topological()] == ["b", "c", "d", "a"]


def test_an_entry_two_tasks_share_is_looked_up_once(
    dataset: Path, store: CacheStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """alpha and beta build the same environment: one image key, one lookup per plan."""
    looked_up: list[tuple[str, str]] = []
    lookup = store.get_action

    def counting(kind: str, key: str, present: set[tuple[str, str]] | None = None) -> object:
        looked_up.append((kind, key))
        return lookup(kind, key, present)

    monkeypatch.setattr(store, "get_action", counting)
    planned = plan(PlanRequest(dataset=dataset), store)
    images = {node.key for node in planned.nodes() if node.kind == "image"}
    assert len(images) == 1
    assert looked_up.count(("image", images.pop())) == 1
    assert len(looked_up) == len(set(looked_up)) == len(planned.nodes()) - 1


def test_an_edit_that_keeps_size_and_mtime_still_changes_the_keys(
    dataset: Path, store: CacheStore
) -> None:
    """The stat cache trusts an old file's digest while its stat is unchanged; an edit of the
    same size with its mtime put back still moves the ctime, so the plan reads it again."""
    import os
    import time

    old = time.time() - 3600  # past the stat cache's racy window, as on a settled dataset
    for path in dataset.rglob("*"):
        os.utime(path, (old, old))
    before = keys(dataset, store)
    assert keys(dataset, store) == before  # the second plan takes its digests from the cache
    evaluator = dataset / ALPHA / "evaluator.py"
    text = evaluator.read_text()
    evaluator.write_text(text.replace("PASS", "FAIL"))
    os.utime(evaluator, (old, old))
    after = keys(dataset, store)
    assert {name for name in before if before[name] != after[name]} == {"lock:alpha"} | EVALUATION
