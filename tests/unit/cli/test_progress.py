"""The live progress line of `ageval run`: counts and the pass rate so far."""

from __future__ import annotations

import pytest

from agevalx.cache.manifest import ActionManifest
from agevalx.cli.progress import JobProgress
from agevalx.graph.execute import NodeReport
from agevalx.graph.nodes import Node

pytestmark = pytest.mark.unit


def evaluated(attempt: int, status: str) -> NodeReport:
    node = Node(
        id=f"evaluate:t#{attempt}",
        kind="evaluate",
        key="0" * 32,
        inputs={},
        parents={},
        status="miss",
        task_id="t",
        attempt=attempt,
    )
    action = ActionManifest.create("evaluate", "0" * 32, {}, {"status": status})
    return NodeReport(node=node, outcome="computed", action=action)


def test_done_attempts_count_as_done_but_not_in_the_pass_rate() -> None:
    progress = JobProgress()
    progress.total = 3
    with progress:
        for attempt, status in enumerate(("PASS", "FAIL", "DONE")):
            progress.finish(evaluated(attempt, status))
        line = progress._render().plain
    assert "attempts: 3/3 done" in line
    assert "pass rate 50%" in line
