"""Golden values: an accidental change of a key formula or of a rule is caught here."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
from pathlib import Path

import pytest
import xxhash

from agevalx.agents import catalog, scripted
from agevalx.cache.store import CacheStore
from agevalx.graph import keys
from agevalx.graph.keys import (
    AGEVAL_VERSION,
    KEY_SCHEMA,
    key_bytes,
    key_material,
    lock_field,
    node_key,
    select_files,
)
from agevalx.graph.rules import FileSelection, Rule, load_rules
from agevalx.hashing import canonical_json, canonical_members
from agevalx.lockfile import BindingRequest
from agevalx.operations.planning import PlanRequest, plan

pytestmark = pytest.mark.unit

SYNTHETIC = Rule.model_validate(
    {
        "kind": "demo",
        "version": 3,
        "scope": "task",
        "description": "d",
        "outputs": [{"name": "out", "type": "blob"}],
    }
)


def test_key_material_has_schema_kind_version_inputs_and_sorted_parents() -> None:
    material = key_material(SYNTHETIC, {"request": {"attempt": 0}}, {"run": ["b" * 32, "a" * 32]})
    assert material == {
        "key_schema": KEY_SCHEMA,
        "ageval": AGEVAL_VERSION,
        "kind": "demo",
        "rule_version": 3,
        "inputs": {"request": {"attempt": 0}},
        "parents": {"run": ["a" * 32, "b" * 32]},
    }


def test_node_key_is_xxh3_128_of_the_canonical_material_and_pinned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(keys, "AGEVAL_VERSION", "0.1.0")
    key = node_key(SYNTHETIC, {"task_files": {"a.txt": "0" * 32}}, {"image": ["1" * 32]})
    canonical = (
        '{"ageval":"0.1.0","inputs":{"task_files":{"a.txt":"' + "0" * 32 + '"}},'
        '"key_schema":2,"kind":"demo","parents":{"image":["' + "1" * 32 + '"]},"rule_version":3}'
    )
    assert key == xxhash.xxh3_128_hexdigest(canonical.encode())
    assert key == "05900c082ff6ccbe1049779ec9b15d9b"


def test_the_ageval_release_enters_every_key(monkeypatch: pytest.MonkeyPatch) -> None:
    before = node_key(SYNTHETIC, {}, {})
    monkeypatch.setattr(keys, "AGEVAL_VERSION", "99.0.0")
    assert node_key(SYNTHETIC, {}, {}) != before
    assert importlib.metadata.version("agevalx") == AGEVAL_VERSION


def test_parent_order_does_not_change_the_key() -> None:
    first = node_key(SYNTHETIC, {}, {"run": ["a" * 32, "b" * 32]})
    assert first == node_key(SYNTHETIC, {}, {"run": ["b" * 32, "a" * 32]})


def test_rule_version_enters_the_key() -> None:
    bumped = SYNTHETIC.model_copy(update={"version": 4})
    assert node_key(SYNTHETIC, {}, {}) != node_key(bumped, {}, {})


def test_select_files_applies_include_and_exclude_to_directories() -> None:
    files = {"a.py": "1", "evaluation/x.py": "2", "evaluator.py": "3", "data/y": "4"}
    chosen = select_files(
        files, FileSelection(include=["**"], exclude=["evaluation", "evaluator.py"])
    )
    assert chosen == {"a.py": "1", "data/y": "4"}
    assert select_files(files, FileSelection(include=["evaluation/**"])) == {"evaluation/x.py": "2"}


def test_lock_field_reads_dotted_paths_and_missing_is_none() -> None:
    document = {"task": {"limits": {"wall_time_seconds": 5}}}
    assert lock_field(document, "task.limits.wall_time_seconds") == 5
    assert lock_field(document, "task.limits.nope") is None
    assert lock_field(document, "task.limits.wall_time_seconds.deeper") is None


def test_every_shipped_rule_loads_and_names_known_kinds() -> None:
    rules = load_rules()
    assert set(rules) == {
        "lock",
        "image",
        "scoring_image",
        "scoring_host",
        "run",
        "checkpoint",
        "evaluate",
        "summary",
        "replay",
        "leaderboard",
    }
    assert rules["evaluate"].parents == ["run", "scoring_image", "scoring_host"]
    assert rules["scoring_image"].when == "scoring_image"
    assert rules["scoring_host"].when == "binding.evaluate_host.isolated"
    assert all(rule.executor for rule in rules.values() if rule.kind != "checkpoint")
    assert rules["run"].parents == ["image"]


GOLDEN_KEYS = {
    "lock:alpha": "65f373caec7f18c490c3d23dfc328cd0",
    "image:alpha": "9c3da070438b246560d7defe033cc2a3",
    "run:alpha#0": "fb722f507a00202608f7431179be2cfc",
    "evaluate:alpha#0": "df83d1382a4ce670ab0ec284dd1756a4",
}


def test_keys_of_each_kind_for_a_fixed_dataset_are_pinned(dataset: Path, store: CacheStore) -> None:
    planned = plan(PlanRequest(dataset=dataset, tasks=("alpha",), k=2), store)
    keys = {node.id: node.key for node in planned.nodes()}
    assert {name: keys[name] for name in GOLDEN_KEYS} == GOLDEN_KEYS
    assert keys["summary:job"] == "69788872d19b2a76c2bb1fd11f6b64e9"


@pytest.mark.parametrize(
    "inputs",
    [
        {},
        {"request": {"attempt": 2, "fork": None}},
        {"task_files": {"é/ü.txt": "0" * 32, "a": "dir"}, "lock_fields": {"x.y": [1, {"b": 2.5}]}},
        {"request": {"text": '\x00 " \\ \u2028'}, "package": {"pins": "1" * 32}},
    ],
)
def test_key_bytes_from_encoded_inputs_are_the_canonical_key_material(
    inputs: dict[str, object],
) -> None:
    parents = {"run": ["b" * 32, "a" * 32], "image": ["c" * 32]}
    expected = canonical_json(key_material(SYNTHETIC, inputs, parents))
    assert key_bytes(SYNTHETIC, canonical_json(inputs), parents) == expected
    members = canonical_members({name: canonical_json(value) for name, value in inputs.items()})
    assert members == canonical_json(inputs)
    assert node_key(SYNTHETIC, inputs, parents) == xxhash.xxh3_128_hexdigest(expected)


@pytest.mark.parametrize(
    "value",
    [
        {"b": [1, 2.5, -0.0, 1e300, True, None], "a": {"z": 'é\u2028\x00"\\', "y": {}}},
        "plain",
        ["a" * 32, "b" * 32],
        {"x": (1, 2)},
        12345678901234567890,
        {2: "int key", 1: "int keys sort as numbers"},
        [],
    ],
)
def test_canonical_json_is_json_dumps_with_the_canonical_options(value: object) -> None:
    """The reused C encoder writes exactly what `json.dumps` with sorted keys, no spaces and
    no ASCII escaping writes."""
    expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical_json(value) == expected.encode("utf-8")


@pytest.mark.parametrize("value", [float("nan"), {"a": [float("inf")]}, {"a": object()}])
def test_canonical_json_refuses_what_json_cannot_write_canonically(value: object) -> None:
    with pytest.raises((ValueError, TypeError)):
        canonical_json(value)
    assert canonical_json({"after": [1]}) == b'{"after":[1]}'


def test_planned_keys_are_the_keys_of_their_own_inputs(dataset: Path, store: CacheStore) -> None:
    """The planner serialises the inputs attempts share once; each key must still be the
    digest of its node's whole material."""
    rules = load_rules()
    for node in plan(PlanRequest(dataset=dataset, k=3), store).nodes():
        assert node.key == node_key(rules[node.kind], node.inputs, node.parents), node.id


AGENT_PROFILES = """\
format: ageval.profiles/1
agent_profiles:
  pi: {executor: acp, model: {id: m}, options: {entry: pi}}
  codex: {executor: acp, model: {id: m}, options: {entry: codex-acp}}
  scripted: {executor: acp, options: {entry: ageval-scripted-agent, script: s.yaml}}
"""


def _run_keys(dataset: Path, store: CacheStore) -> dict[str, str]:
    keys = {}
    for agent in ("pi", "codex", "scripted"):
        request = PlanRequest(
            dataset=dataset, tasks=("alpha",), binding=BindingRequest(agent=agent)
        )
        keys[agent] = plan(request, store).node("run:alpha#0").key
    return keys


def test_editing_the_scripted_agent_reruns_only_the_runs_that_use_it(
    dataset: Path, store: CacheStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    (dataset / "profiles.yaml").write_text(AGENT_PROFILES)
    before = _run_keys(dataset, store)
    edited = scripted.agent_source() + b"\n# edited\n"
    monkeypatch.setattr(scripted, "agent_source", lambda: edited)
    after = _run_keys(dataset, store)
    assert after["pi"] == before["pi"] and after["codex"] == before["codex"]
    assert after["scripted"] != before["scripted"]


def test_a_new_agent_bundle_version_reruns_the_runs_of_that_agent(
    dataset: Path, store: CacheStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    (dataset / "profiles.yaml").write_text(AGENT_PROFILES)
    before = _run_keys(dataset, store)
    pi = catalog.agents()["pi"]
    newer = dataclasses.replace(pi.bundle, packages=(("pi-acp", "0.0.35"), *pi.bundle.packages[1:]))
    monkeypatch.setitem(catalog.agents(), "pi", dataclasses.replace(pi, bundle=newer))
    after = _run_keys(dataset, store)
    assert after["pi"] != before["pi"]
    assert after["codex"] == before["codex"] and after["scripted"] == before["scripted"]


def _isolated(dataset: Path, python_version: str) -> None:
    profiles = dataset / "profiles.yaml"
    options = f"{{python_version: '{python_version}'}}"
    host = f"evaluate_host: {{isolated: true, environment_options: {options}}}\n"
    profiles.write_text(profiles.read_text() + host)


def test_an_isolated_host_is_a_node_keyed_by_its_python_version(
    dataset: Path, store: CacheStore
) -> None:
    plain = plan(PlanRequest(dataset=dataset, tasks=("alpha",)), store)
    assert "scoring_host:alpha" not in plain.graph
    _isolated(dataset, "3.13")
    first = plan(PlanRequest(dataset=dataset, tasks=("alpha",)), store)
    host = first.node("scoring_host:alpha")
    assert "scoring_host:alpha" in set(first.graph.predecessors("evaluate:alpha#0"))
    (dataset / "profiles.yaml").write_text(
        (dataset / "profiles.yaml").read_text().replace("'3.13'", "'3.12'")
    )
    second = plan(PlanRequest(dataset=dataset, tasks=("alpha",)), store)
    assert second.node("scoring_host:alpha").key != host.key
    assert second.node("evaluate:alpha#0").key != first.node("evaluate:alpha#0").key
    assert second.node("run:alpha#0").key == first.node("run:alpha#0").key


def test_editing_evaluation_collect_changes_the_run_key(dataset: Path, store: CacheStore) -> None:
    before = plan(PlanRequest(dataset=dataset, tasks=("alpha",)), store).node("run:alpha#0").key
    task = dataset / "tasks/alpha/task.yaml"
    task.write_text(task.read_text() + "evaluation: {collect: [{path: /var/log/app.log}]}\n")
    after = plan(PlanRequest(dataset=dataset, tasks=("alpha",)), store).node("run:alpha#0").key
    assert after != before
