"""`explain` names the input that changed since a node identity was last computed."""

from __future__ import annotations

from pathlib import Path

import pytest

from agevalx.cache.store import CacheStore
from agevalx.cli import main
from agevalx.graph.explain import diff_inputs, explain
from agevalx.graph.journal import record
from agevalx.operations.planning import PlanRequest, plan

pytestmark = pytest.mark.unit


def record_all(dataset: Path, store: CacheStore) -> None:
    for node in plan(PlanRequest(dataset=dataset, tasks=("alpha",)), store).nodes():
        record(dataset, node)


def test_never_computed_node_says_so(dataset: Path, store: CacheStore) -> None:
    report = explain(plan(PlanRequest(dataset=dataset, tasks=("alpha",)), store), "run:alpha#0")
    assert report["reason"] == "never computed for this identity"


def test_explain_names_the_edited_evaluator(dataset: Path, store: CacheStore) -> None:
    record_all(dataset, store)
    (dataset / "tasks/alpha/evaluator.py").write_text("def evaluate(ctx):\n    return {}\n")
    report = explain(
        plan(PlanRequest(dataset=dataset, tasks=("alpha",)), store), "evaluate:alpha#0"
    )
    assert report["reason"] == "inputs changed"
    assert [change["input"] for change in report["changes"]] == ["task_files.evaluator.py"]
    assert report["parents"] == []


def test_explain_follows_a_changed_parent_to_its_cause(dataset: Path, store: CacheStore) -> None:
    record_all(dataset, store)
    with (dataset / "tasks/alpha/environment/Dockerfile").open("a") as handle:
        handle.write("RUN echo hi\n")
    report = explain(
        plan(PlanRequest(dataset=dataset, tasks=("alpha",)), store), "evaluate:alpha#0"
    )
    assert report["changes"] == []
    run = report["parents"][0]
    assert run["id"] == "run:alpha#0"
    image = next(parent for parent in run["parents"] if parent["id"] == "image:alpha")
    assert [change["input"] for change in image["changes"]] == ["task_files.environment/Dockerfile"]


def test_diff_inputs_reports_added_removed_and_changed() -> None:
    changes = diff_inputs({"a": {"x": 1, "y": 2}}, {"a": {"x": 3, "z": 4}})
    assert [(c["input"], c["change"]) for c in changes] == [
        ("a.x", "changed"),
        ("a.y", "removed"),
        ("a.z", "added"),
    ]


def test_cli_lock_then_explain_after_an_edit(
    dataset: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lock", str(dataset), "--task", "alpha"]) == 0
    assert "computed lock alpha" in capsys.readouterr().out
    assert main(["lock", str(dataset), "--task", "alpha"]) == 0
    assert "reused   lock alpha" in capsys.readouterr().out
    (dataset / "tasks/alpha/prompts/task.md").write_text("Changed.\n")
    assert main(["graph", "explain", str(dataset), "--node", "lock:alpha", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"input": "task_files.prompts/task.md"' in out


def test_cli_graph_show_lists_nodes_with_keys(
    dataset: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["graph", "show", str(dataset), "-k", "2", "--json"]) == 0
    import json

    document = json.loads(capsys.readouterr().out)
    ids = [node["id"] for node in document["nodes"]]
    assert "run:beta#1" in ids and "summary:job" in ids
    assert all(len(node["key"]) == 32 for node in document["nodes"])
    assert main(["graph", "explain", str(dataset), "--node", "nope:x"]) == 1
