"""The scheduler: misses computed in dependency order, hits reused, failures contained."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import pytest

from agevalx.cache.manifest import OutputRef
from agevalx.cache.store import CacheStore
from agevalx.errors import AgevalError
from agevalx.graph.context import ExecutionContext, Executor, NodeResult
from agevalx.graph.execute import execute
from agevalx.graph.nodes import Node
from agevalx.graph.registry import executor_for, substituted
from agevalx.graph.rules import load_rules
from agevalx.operations.planning import PlanRequest, plan
from agevalx.testing.placeholders import declared_outputs

pytestmark = pytest.mark.unit


class Recorder:
    """Fake executors for every kind: store a blob naming the node, remember the order."""

    def __init__(self, fail: set[str] | None = None, delay: float = 0.0) -> None:
        self.fail = fail or set()
        self.delay = delay
        self.order: list[str] = []
        self.running = 0
        self.peak = 0
        self.guard = threading.Lock()

    def __call__(self, node: Node, context: ExecutionContext) -> NodeResult:
        with self.guard:
            self.running += 1
            self.peak = max(self.peak, self.running)
        try:
            time.sleep(self.delay)
            for parent in context.parent_results(node):
                assert parent.key  # every parent finished before this node started
            if node.id in self.fail:
                raise AgevalError("fake_failure", f"{node.id} failed on purpose")
            with self.guard:
                self.order.append(node.id)
            return NodeResult(outputs=declared_outputs(node, context.store))
        finally:
            with self.guard:
                self.running -= 1

    def executors(self) -> dict[str, Executor | None]:
        return {kind: self for kind in ("image", "run", "evaluate", "summary")}


def run_job(dataset: Path, store: CacheStore, recorder: Recorder, workers: int = 1, k: int = 2):
    planned = plan(PlanRequest(dataset=dataset, k=k), store)
    with substituted(recorder.executors()):
        return execute(planned, store, workers=workers)


def test_first_run_computes_everything_and_second_reuses_everything(
    dataset: Path, store: CacheStore
) -> None:
    first = run_job(dataset, store, Recorder())
    assert first.ok and first.counts()["computed"] == len(first.nodes) - 1  # one image, twice
    again = Recorder()
    second = run_job(dataset, store, again)
    assert second.counts() == {
        "reused": len(first.nodes),
        "computed": 0,
        "failed": 0,
        "blocked": 0,
        "skipped": 0,
    }
    assert again.order == []


def test_parents_finish_before_children(dataset: Path, store: CacheStore) -> None:
    recorder = Recorder()
    run_job(dataset, store, recorder, workers=3)
    position = {name: index for index, name in enumerate(recorder.order)}
    [image] = [position[name] for name in position if name.startswith("image:")]
    assert image < position["run:alpha#0"] < position["evaluate:alpha#0"]
    assert position["summary:job"] == len(recorder.order) - 1


def test_a_failed_node_blocks_its_descendants_and_nothing_else(
    dataset: Path, store: CacheStore
) -> None:
    report = run_job(dataset, store, Recorder(fail={"run:alpha#1"}))
    outcome = {item.node.id: item.outcome for item in report.nodes}
    assert outcome["run:alpha#1"] == "failed"
    assert outcome["evaluate:alpha#1"] == "blocked"
    assert outcome["summary:job"] == "blocked"
    assert outcome["evaluate:alpha#0"] == "computed"
    assert outcome["evaluate:beta#1"] == "computed"
    failed = next(item for item in report.nodes if item.outcome == "failed")
    assert failed.error is not None and failed.error.code == "fake_failure"
    assert not report.ok


def test_after_a_failure_the_next_run_computes_only_what_is_missing(
    dataset: Path, store: CacheStore
) -> None:
    run_job(dataset, store, Recorder(fail={"run:alpha#1"}))
    recorder = Recorder()
    report = run_job(dataset, store, recorder)
    assert sorted(recorder.order) == ["evaluate:alpha#1", "run:alpha#1", "summary:job"]
    assert report.ok


def test_nodes_of_one_key_are_computed_once_and_the_others_reuse_its_entry(
    dataset: Path, store: CacheStore
) -> None:
    """alpha and beta share one Dockerfile: their image nodes are the same work."""
    recorder = Recorder(delay=0.05)
    report = run_job(dataset, store, recorder, workers=2)
    images = {item.node.id: item for item in report.nodes if item.node.kind == "image"}
    assert images["image:alpha"].node.key == images["image:beta"].node.key
    assert sorted(item.outcome for item in images.values()) == ["computed", "reused"]
    assert [name for name in recorder.order if name.startswith("image:")] in (
        ["image:alpha"],
        ["image:beta"],
    )
    actions = {item.action.canonical_bytes() for item in images.values() if item.action}
    assert len(actions) == 1
    runs = [item for item in report.nodes if item.node.kind == "run"]
    assert {item.outcome for item in runs} == {"computed"} and report.ok


def test_when_the_node_computing_a_key_fails_the_others_of_that_key_fail_with_its_error(
    dataset: Path, store: CacheStore
) -> None:
    started: list[str] = []
    recorder = Recorder(fail={"image:alpha", "image:beta"}, delay=0.05)

    def counting(node: Node, context: ExecutionContext) -> NodeResult:
        started.append(node.id)
        return recorder(node, context)

    planned = plan(PlanRequest(dataset=dataset, k=1), store)
    with substituted({**recorder.executors(), "image": counting}):
        report = execute(planned, store, workers=2)
    assert len(started) == 1 and started[0].startswith("image:")
    images = [item for item in report.nodes if item.node.kind == "image"]
    assert [item.outcome for item in images] == ["failed", "failed"]
    assert {item.error.code for item in images if item.error} == {"fake_failure"}
    assert {item.outcome for item in report.nodes if item.node.kind == "run"} == {"blocked"}


def test_workers_bound_concurrency(dataset: Path, store: CacheStore) -> None:
    recorder = Recorder(delay=0.05)
    run_job(dataset, store, recorder, workers=2, k=3)
    assert recorder.peak == 2


def test_one_worker_runs_one_node_at_a_time(dataset: Path, store: CacheStore) -> None:
    recorder = Recorder(delay=0.01)
    run_job(dataset, store, recorder, workers=1)
    assert recorder.peak == 1


def test_a_kind_without_executor_fails_with_a_code(dataset: Path, store: CacheStore) -> None:
    planned = plan(PlanRequest(dataset=dataset, tasks=("beta",)), store)
    with substituted({"image": None}):
        report = execute(planned, store)
    outcome = {item.node.id: item for item in report.nodes}
    assert outcome["lock:beta"].outcome == "computed"
    image = outcome["image:beta"]
    assert image.outcome == "failed" and image.error is not None
    assert image.error.code == "executor_unavailable"
    assert outcome["evaluate:beta#0"].outcome == "blocked"


def test_a_crashing_executor_is_a_failed_node_not_a_crash(dataset: Path, store: CacheStore) -> None:
    def broken(node: Node, context: ExecutionContext) -> NodeResult:
        raise RuntimeError("boom")

    planned = plan(PlanRequest(dataset=dataset, tasks=("beta",)), store)
    with substituted({"image": broken}):
        report = execute(planned, store)
    image = next(item for item in report.nodes if item.node.id == "image:beta")
    assert image.outcome == "failed" and image.error is not None
    assert image.error.code == "node_failed" and "boom" in image.error.message


def test_an_executor_storing_other_outputs_than_its_rule_declares_fails(
    dataset: Path, store: CacheStore
) -> None:
    def wrong(node: Node, context: ExecutionContext) -> NodeResult:
        digest = context.store.put_bytes(b"not the image document")
        return NodeResult(outputs={"picture": OutputRef(digest=digest, type="blob")})

    planned = plan(PlanRequest(dataset=dataset, tasks=("beta",)), store)
    with substituted({"image": wrong}):
        report = execute(planned, store)
    image = next(item for item in report.nodes if item.node.id == "image:beta")
    assert image.outcome == "failed" and image.error is not None
    assert image.error.code == "node_outputs_mismatch" and "picture" in image.error.message
    assert store.get_action("image", image.node.key) is None


def test_every_kind_with_an_executor_registers_it_from_the_module_its_rule_names() -> None:
    for rule in load_rules().values():
        if rule.executor is not None:
            assert callable(executor_for(rule)), rule.kind


class Flaky(Recorder):
    """Fails the named nodes' first `times` tries with an infrastructure-looking code."""

    def __init__(self, flaky: set[str], times: int) -> None:
        super().__init__()
        self.flaky = flaky
        self.times = times
        self.tries: dict[str, int] = {}

    def __call__(self, node: Node, context: ExecutionContext) -> NodeResult:
        with self.guard:
            self.tries[node.id] = self.tries.get(node.id, 0) + 1
            failing = node.id in self.flaky and self.tries[node.id] <= self.times
        if failing:
            raise AgevalError("environment_lost", f"{node.id} lost its container")
        return super().__call__(node, context)


def run_with(dataset: Path, store: CacheStore, recorder: Recorder, **policies: object):
    planned = plan(PlanRequest(dataset=dataset, k=2), store)
    with substituted(recorder.executors()):
        return execute(planned, store, workers=2, **policies)  # type: ignore[arg-type]


def test_a_retried_node_is_computed_again_and_keeps_its_earlier_failures(
    dataset: Path, store: CacheStore
) -> None:
    flaky = Flaky({"run:alpha#0"}, times=2)
    report = run_with(dataset, store, flaky, retry=lambda node, error, tries: tries <= 2)
    assert report.ok
    [item] = [item for item in report.nodes if item.node.id == "run:alpha#0"]
    assert item.outcome == "computed"
    assert [error.code for error in item.tries] == ["environment_lost", "environment_lost"]
    assert item.to_dict()["tries"][0]["code"] == "environment_lost"
    assert flaky.tries["run:alpha#0"] == 3


def test_retries_stop_at_the_policy_limit(dataset: Path, store: CacheStore) -> None:
    flaky = Flaky({"run:alpha#0"}, times=5)
    report = run_with(dataset, store, flaky, retry=lambda node, error, tries: tries <= 1)
    outcomes = {item.node.id: item for item in report.nodes}
    assert outcomes["run:alpha#0"].outcome == "failed"
    assert len(outcomes["run:alpha#0"].tries) == 1
    assert outcomes["evaluate:alpha#0"].outcome == "blocked"
    assert flaky.tries["run:alpha#0"] == 2


def test_a_held_back_node_and_its_descendants_are_skipped(dataset: Path, store: CacheStore) -> None:
    held = AgevalError("job_limit_reached", "not started")

    def admit(node: Node) -> AgevalError | None:
        return held if node.id == "run:alpha#1" else None

    recorder = Recorder()
    report = run_with(dataset, store, recorder, admit=admit)
    outcomes = {item.node.id: item for item in report.nodes}
    assert outcomes["run:alpha#1"].outcome == "skipped"
    assert outcomes["evaluate:alpha#1"].outcome == "skipped"
    assert outcomes["evaluate:alpha#1"].error is held
    assert "run:alpha#1" not in recorder.order
    assert outcomes["evaluate:alpha#0"].outcome == "computed"
    assert report.counts()["skipped"] >= 2


def test_admission_is_decided_when_a_worker_is_free_for_the_node(
    dataset: Path, store: CacheStore
) -> None:
    """With one worker, the nodes queued behind a running one are admitted only as they
    start: a limit reached by the running one holds back every later one."""
    spent: list[str] = []

    class Spending(Recorder):
        def __call__(self, node: Node, context: ExecutionContext) -> NodeResult:
            if node.kind == "run":
                spent.append(node.id)
            return super().__call__(node, context)

    def admit(node: Node) -> AgevalError | None:
        if node.kind == "run" and spent:
            return AgevalError("job_limit_reached", "the budget is spent")
        return None

    planned = plan(PlanRequest(dataset=dataset, k=3), store)
    with substituted(Spending().executors()):
        report = execute(planned, store, workers=1, admit=admit)
    runs = {item.node.id: item.outcome for item in report.nodes if item.node.kind == "run"}
    assert sorted(runs.values()).count("computed") == 1
    assert sorted(runs.values()).count("skipped") == len(runs) - 1


def test_ctrl_c_delivered_to_a_worker_thread_interrupts_a_running_job(
    dataset: Path, store: CacheStore
) -> None:
    """The kernel may hand a process's SIGINT to any of its threads. Sent to a worker's
    thread, while the main thread waits for a node that runs for minutes, it still raises
    KeyboardInterrupt in the main thread at once, not when that node ends: on_interrupt runs,
    and the running node is still running."""
    assert threading.current_thread() is threading.main_thread(), "signals need the main thread"
    released, running, sent = threading.Event(), threading.Event(), threading.Lock()
    interrupted: list[bool] = []

    class Blocking(Recorder):
        def __call__(self, node: Node, context: ExecutionContext) -> NodeResult:
            if node.kind == "run" and sent.acquire(blocking=False):  # one node, one SIGINT
                running.set()
                signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # to this thread
                released.wait(30)
                running.clear()
            return super().__call__(node, context)

    def on_interrupt() -> None:
        interrupted.append(running.is_set())
        released.set()

    planned = plan(PlanRequest(dataset=dataset, k=1), store)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with substituted(Blocking().executors()), pytest.raises(KeyboardInterrupt):
            execute(planned, store, workers=2, on_interrupt=on_interrupt)
    finally:
        signal.signal(signal.SIGINT, previous)
        released.set()
    assert interrupted == [True], "the interrupt waited for the running node to end"
