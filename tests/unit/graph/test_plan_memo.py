"""The plan memo: a fully cached plan is remembered outside the cache and returned while
nothing it read has changed; any change it read makes a new plan, equal to one made with the
memo off."""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agevalx.cache import layout
from agevalx.cache.store import CacheStore
from agevalx.graph import memo
from agevalx.graph import plan as plan_module
from agevalx.graph.execute import execute
from agevalx.graph.plan import Plan
from agevalx.graph.registry import substituted
from agevalx.graph.rules import load_rules
from agevalx.operations.planning import PlanRequest, plan
from agevalx.testing.placeholders import RUNNABLE
from agevalx.userkey import KEY_BYTES

pytestmark = pytest.mark.unit

K = 2


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv(memo.ENV_VAR, raising=False)
    # The files of these tests are seconds old: the racy window would keep every memo out.
    monkeypatch.setattr(memo, "RACY_WINDOW_NS", 0)


@pytest.fixture
def planned(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many times the planner ran (not the memo)."""
    runs = [0]
    original = plan_module._Planner.plan

    def counted(self: Any) -> Plan:
        runs[0] += 1
        return original(self)

    monkeypatch.setattr(plan_module._Planner, "plan", counted)
    yield runs


def _filled(dataset: Path, store: CacheStore) -> None:
    with substituted(RUNNABLE):
        report = execute(plan(PlanRequest(dataset=dataset, k=K), store), store, workers=1)
    assert report.ok, report.counts()


def _shape(planned: Plan) -> list[Any]:
    nodes, children = planned.structure()
    return [
        [
            (
                node.summary(),
                node.inputs,
                node.payload,
                node.action.canonical_bytes() if node.action else None,
            )
            for node in nodes.values()
        ],
        children,
        planned.task_ids,
    ]


def _fresh(dataset: Path, store: CacheStore, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    with monkeypatch.context() as off:
        off.setenv(memo.ENV_VAR, "0")
        return _shape(plan(PlanRequest(dataset=dataset, k=K), store))


def _memos() -> list[Path]:
    return [path for path in memo.plans_dir().glob("*") if path.name != "key"]


def test_a_fully_cached_plan_is_remembered_and_equals_a_fresh_one(
    dataset: Path, store: CacheStore, planned: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    _filled(dataset, store)
    before = planned[0]
    first = plan(PlanRequest(dataset=dataset, k=K), store)
    assert planned[0] == before + 1 and len(_memos()) == 1
    second = plan(PlanRequest(dataset=dataset, k=K), store)
    assert planned[0] == before + 1, "the remembered plan was made again"
    assert _shape(second) == _shape(first) == _fresh(dataset, store, monkeypatch)
    assert all(node.status == "hit" for node in second.nodes())
    # a branch keyed beside the remembered plan (a replay) reads the inputs a planner gives
    rule = load_rules()["run"]
    assert second.key_inputs is not None and first.key_inputs is not None
    assert second.key_inputs(rule, "alpha", {}) == first.key_inputs(rule, "alpha", {})
    # another request is another memo (k=1 would be too, but its summary is not cached)
    images = plan(PlanRequest(dataset=dataset, k=K, kinds=frozenset({"image"})), store)
    assert {node.kind for node in images.nodes()} == {"lock", "image"}
    assert len(_memos()) == 2


def test_a_listing_of_a_remembered_plan_leaves_its_entries_unparsed(
    dataset: Path, store: CacheStore, planned: list[int]
) -> None:
    _filled(dataset, store)
    full = plan(PlanRequest(dataset=dataset, k=K), store)
    before = planned[0]
    listed = plan(PlanRequest(dataset=dataset, k=K, entries=False), store)
    assert planned[0] == before, "the same memo serves a listing"
    assert [node.summary() for node in listed.nodes()] == [node.summary() for node in full.nodes()]
    assert all(node.status == "hit" and node.action is None for node in listed.nodes())
    again = plan(PlanRequest(dataset=dataset, k=K), store)  # entries again, from the same memo
    assert all(node.action is not None for node in again.nodes())
    assert _shape(again) == _shape(full)


def _edit(path: Path) -> Callable[[Path, CacheStore], object]:
    return lambda dataset, store: (dataset / path).write_text(
        (dataset / path).read_text() + "# edited\n"
    )


def _add(path: str) -> Callable[[Path, CacheStore], object]:
    return lambda dataset, store: (dataset / path).write_text("new\n")


def _remove_entry(kind: str) -> Callable[[Path, CacheStore], object]:
    def change(dataset: Path, store: CacheStore) -> None:
        [entry] = [a for a in store.entries() if a.kind == kind][:1]
        layout.action_path(store.root, entry.kind, entry.key).unlink()

    return change


def _remove_blob(dataset: Path, store: CacheStore) -> None:
    [entry] = [a for a in store.entries() if a.kind == "evaluate"][:1]
    action = store.get_action(entry.kind, entry.key)
    assert action is not None
    blob = next(ref.digest for ref in action.outputs.values() if ref.type == "blob")
    path = layout.object_path(store.root, blob)
    path.chmod(0o644)
    path.unlink()


def _symlink(dataset: Path, store: CacheStore) -> None:
    (dataset / "tasks/alpha/data/link").symlink_to("input.txt")


CHANGES = {
    "a task file edited": _edit(Path("tasks/alpha/run.py")),
    "a nested task file edited": _edit(Path("tasks/beta/prompts/task.md")),
    "a file added to a task": _add("tasks/alpha/notes.txt"),
    "a file added to a task's folder": _add("tasks/beta/environment/extra.txt"),
    "a symlink added to a task": _symlink,
    "the profiles edited": _edit(Path("profiles.yaml")),
    "the dataset file edited": _edit(Path("ageval.yaml")),
    "an entry removed": _remove_entry("run"),
    "a lock entry removed": _remove_entry("lock"),
    "an output blob removed": _remove_blob,
}


@pytest.fixture
def remembered(dataset: Path, store: CacheStore) -> Path:
    """The memo of a plan of the filled cache."""
    _filled(dataset, store)
    plan(PlanRequest(dataset=dataset, k=K), store)
    [path] = _memos()
    return path


@pytest.fixture
def replan(dataset: Path, store: CacheStore, planned: list[int]) -> Callable[[], tuple[Plan, bool]]:
    """Plan the filled cache again: the plan, and whether the planner made it."""

    def again() -> tuple[Plan, bool]:
        before = planned[0]
        return plan(PlanRequest(dataset=dataset, k=K), store), planned[0] == before + 1

    return again


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_change_the_plan_read_makes_a_new_plan(
    change: str, remembered: Path, replan: Any, dataset: Path, store: CacheStore, monkeypatch: Any
) -> None:
    CHANGES[change](dataset, store)
    again, made = replan()
    assert made, f"{change}: the memo was used"
    assert _shape(again) == _fresh(dataset, store, monkeypatch)


def test_a_plan_with_a_miss_is_not_remembered(dataset: Path, store: CacheStore) -> None:
    plan(PlanRequest(dataset=dataset, k=K), store)
    assert _memos() == []


@pytest.mark.parametrize("reason", ["files changed within the racy window", "turned off"])
def test_no_memo_is_kept_for_recent_files_or_when_turned_off(
    reason: str, dataset: Path, store: CacheStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _filled(dataset, store)
    if reason == "turned off":
        monkeypatch.setenv(memo.ENV_VAR, "0")
    else:  # the dataset and the entries were written an hour before the plan, at most
        monkeypatch.setattr(memo, "RACY_WINDOW_NS", 3600 * 10**9)
    plan(PlanRequest(dataset=dataset, k=K), store)
    assert _memos() == []


def _tamper_body(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-10] ^= 1
    path.write_bytes(bytes(data))


def _another_key(path: Path) -> None:
    key = memo.plans_dir() / "key"
    key.unlink()
    key.write_bytes(os.urandom(KEY_BYTES))
    key.chmod(0o600)


def _readable_key(path: Path) -> None:
    (memo.plans_dir() / "key").chmod(0o644)


@pytest.mark.parametrize("tamper", [_tamper_body, _another_key, _readable_key])
def test_a_memo_not_signed_by_the_users_private_key_is_not_read(
    tamper: Callable[[Path], None], remembered: Path, replan: Any, monkeypatch: Any
) -> None:
    tamper(remembered)
    loads: list[bytes] = []
    monkeypatch.setattr(pickle, "loads", loads.append)
    _, made = replan()
    assert made and loads == [], "an unsigned memo was unpickled"
