"""The cycle collector around planning: paused while a plan is made, and, in a command that
plans once, what is alive frozen when it resumes, which is safe only because planning makes
no cyclic garbage."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from agevalx.cache.store import CacheStore
from agevalx.graph import plan as plan_module
from agevalx.graph.plan import collector_paused, plans_once
from agevalx.operations.planning import PlanRequest, plan

pytestmark = pytest.mark.unit


@pytest.fixture
def collector() -> Iterator[None]:
    """No command's flag from an earlier test (a CLI test's `ageval run` in this process sets
    it); afterwards the collector as the test found it, and nothing left frozen or flagged."""
    enabled = gc.isenabled()
    plan_module._Collector.freeze = False
    yield
    plan_module._Collector.freeze = False
    gc.unfreeze()
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_planning_makes_no_cyclic_garbage(
    dataset: Path, store: CacheStore, collector: None
) -> None:
    gc.collect()
    gc.disable()
    planned = plan(PlanRequest(dataset=dataset, k=3), store)
    assert gc.collect() == 0, "planning left cyclic garbage: freezing after it would keep it"
    assert planned.nodes()


def test_a_command_that_plans_once_freezes_what_is_alive_when_collections_resume(
    collector: None,
) -> None:
    gc.enable()
    gc.unfreeze()
    with collector_paused():
        assert not gc.isenabled()
        made = [[index] for index in range(1000)]
    assert gc.isenabled() and gc.get_freeze_count() == 0, "froze without plans_once"
    plans_once()
    with collector_paused():
        made += [[index] for index in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(made), "nothing was frozen"


def test_a_nested_pause_leaves_the_freeze_to_the_outer_one(collector: None) -> None:
    gc.enable()
    gc.unfreeze()
    plans_once()
    with collector_paused():
        with collector_paused():
            kept = [[1], [2]]
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    assert gc.isenabled() and gc.get_freeze_count() > 0 and kept
