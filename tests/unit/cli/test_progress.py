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


def test_a_later_round_adds_its_attempts_to_the_total() -> None:
    class Round:
        def __init__(self, runs: int) -> None:
            self.runs = runs

        def nodes(self) -> list[Node]:
            return [evaluated(i, "FAIL").node for i in range(self.runs)] + [
                Node(id=f"run:t#{i}", kind="run", key="", inputs={}, parents={}, status="miss")
                for i in range(self.runs)
            ]

    progress = JobProgress()
    with progress:
        progress.planned(Round(2))  # type: ignore[arg-type]
        for attempt in range(2):
            progress.finish(evaluated(attempt, "FAIL"))
        progress.planned(Round(1))  # type: ignore[arg-type]
        assert "attempts: 2/3 done" in progress._render().plain


def node(kind: str, attempt: int) -> Node:
    return Node(
        id=f"{kind}:t#{attempt}",
        kind=kind,
        key="0" * 32,
        inputs={},
        parents={},
        status="miss",
        task_id="t",
        attempt=attempt,
    )


def test_an_attempt_between_its_run_and_its_evaluation_never_goes_back_to_queued() -> None:
    progress = JobProgress()
    progress.total = 3
    with progress:
        for attempt in range(3):
            progress.start(node("run", attempt))
        line = progress._render().plain
        assert "run 0/3, 3 running" in line and "0 queued" in line
        progress.finish(NodeReport(node=node("run", 0), outcome="computed"))
        line = progress._render().plain
        assert "run 1/3, 2 running" in line and "0 queued" in line, line
        progress.start(node("evaluate", 0))
        assert "evaluate 1 running" in progress._render().plain
        progress.finish(evaluated(0, "PASS"))
        line = progress._render().plain
    assert "attempts: 1/3 done" in line and "evaluate 0 running" in line and "0 queued" in line
