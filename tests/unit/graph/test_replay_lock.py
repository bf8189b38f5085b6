"""A replay is refused when its task locks otherwise than its source did, bindings aside:
the source's lock document (from the cache) against the one the replay plans."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from agevalx.cache.manifest import ActionManifest, OutputRef
from agevalx.cache.store import CacheStore
from agevalx.errors import UsageError
from agevalx.graph.plan import Plan
from agevalx.hashing import digest_json
from agevalx.lockfile.node import lock_bytes
from agevalx.operations.planning import PlanRequest, plan
from agevalx.operations.recovery import source_lock
from agevalx.operations.replay import ReplaySource, _check_same_lock, _first_difference
from agevalx.results.paths import attempt_dir

pytestmark = pytest.mark.unit

SOURCE = ReplaySource(
    attempt="alpha-0-aaaaaaaaaaaa", task="alpha", commands=[], run_key=None, checkpoint=None
)


@pytest.fixture
def planned(dataset: Path, store: CacheStore) -> Plan:
    return plan(PlanRequest(dataset=dataset, tasks=("alpha",), kinds=frozenset({"image"})), store)


def _lock(planned: Plan) -> dict[str, Any]:
    return copy.deepcopy(planned.node("lock:alpha").payload["lock"])


def _recorded(store: CacheStore, document: dict[str, Any], root: Path) -> dict[str, Any] | None:
    """File `document` as the lock of the source attempt's result.json; the lock the replay
    reads back for it (`source_lock`)."""
    key = digest_json(document)
    digest = store.put_bytes(lock_bytes(document))
    outputs = {"lock": OutputRef(digest=digest, type="blob")}
    store.put_action(ActionManifest.create("lock", key, outputs))
    return _source_naming(root, key, store)


def _source_naming(root: Path, key: str, store: CacheStore) -> dict[str, Any] | None:
    directory = attempt_dir(root, SOURCE.attempt)
    directory.mkdir(parents=True, exist_ok=True)
    nodes = [{"kind": "lock", "key": key}]
    (directory / "result.json").write_text(json.dumps({"nodes": nodes}))
    return source_lock(root, SOURCE.attempt, store)


def test_the_same_lock_and_an_unknown_one_pass(
    planned: Plan, store: CacheStore, tmp_path: Path
) -> None:
    _check_same_lock(planned, SOURCE, _recorded(store, _lock(planned), tmp_path))
    unknown = _source_naming(tmp_path, "f" * 32, store)  # not in the cache: not checked
    assert unknown is None
    _check_same_lock(planned, SOURCE, unknown)


def test_another_binding_passes(planned: Plan, store: CacheStore, tmp_path: Path) -> None:
    """`--agent`/`--model`/`--profiles` may bind a replay otherwise, and the host's model
    endpoints may have moved: those fields are not compared."""
    source = _lock(planned)
    source["binding"] = {"roles": {"solver": {"base_url": "http://localhost:1/v1"}}}
    source["overrides"] = {"agent": "pi", "model": "openai/m"}
    source["config_digest"] = "0" * 32
    _check_same_lock(planned, SOURCE, _recorded(store, source, tmp_path))


def test_other_limits_are_refused_naming_the_field(
    planned: Plan, store: CacheStore, tmp_path: Path
) -> None:
    source = _lock(planned)
    source["task"]["limits"]["wall_time_seconds"] += 240
    with pytest.raises(UsageError) as caught:
        _check_same_lock(planned, SOURCE, _recorded(store, source, tmp_path))
    assert caught.value.code == "replay_lock_differs"
    assert "task.limits.wall_time_seconds" in caught.value.message
    assert caught.value.hint is not None and "--job-config" in caught.value.hint


def test_the_first_difference_is_a_dotted_path() -> None:
    assert _first_difference({"a": {"b": 1, "c": 2}}, {"a": {"b": 1, "c": 3}}) == "a.c"
    assert _first_difference({"a": 1}, {"a": 1, "b": None}) is None
    assert _first_difference({"a": [1]}, {"a": [2]}) == "a"
    assert _first_difference({"a": 1}, {"a": 1}) is None
