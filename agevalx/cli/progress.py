"""The live progress display of `ageval run` on a terminal."""

from __future__ import annotations

import threading
import time
from types import TracebackType

from rich.live import Live
from rich.text import Text

from agevalx.cli.render import real_console, stderr
from agevalx.graph.execute import NodeReport
from agevalx.graph.nodes import Node
from agevalx.graph.plan import Plan


class JobProgress:
    """Attempts done / running / queued, pass rate so far, elapsed time; refreshed live."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.total = 0
        self.running: set[str] = set()
        self.done = 0
        self.passed = 0
        self.unjudged = 0
        """Attempts scored without a pass/fail result (DONE): not in the pass rate."""
        self.errors = 0
        self.failed_nodes: list[str] = []
        self._lock = threading.Lock()
        self._live = Live(
            console=real_console(stderr),
            refresh_per_second=4,
            transient=True,
            get_renderable=self._render,
        )

    def _render(self) -> Text:
        elapsed = time.monotonic() - self.started
        if not self.total and not self.done:  # not planned yet: a large job takes a while
            return Text(f"planning the job's graph (locks, keys, cache lookups) | {elapsed:5.0f}s")
        queued = max(0, self.total - self.done - len(self.running))
        judged = self.done - self.unjudged
        rate = f"{self.passed / judged:.0%}" if judged else "-"
        return Text(
            f"attempts: {self.done}/{self.total} done, {len(self.running)} running, "
            f"{queued} queued | pass rate {rate} | errors {self.errors} | {elapsed:5.0f}s"
        )

    def planned(self, plan: Plan) -> None:
        with self._lock:
            # The `pass` strategy plans one round at a time: a round adds to what is done.
            self.total = self.done + sum(1 for node in plan.nodes() if node.kind == "run")
            self._live.refresh()

    def start(self, node: Node) -> None:
        with self._lock:
            if node.kind == "run":
                self.running.add(node.id)
            self._live.refresh()

    def finish(self, report: NodeReport) -> None:
        with self._lock:
            node = report.node
            if node.kind == "run":
                self.running.discard(node.id)
                if report.outcome in ("failed", "blocked"):
                    self.done += 1
                    self.errors += 1
            if node.kind == "evaluate" and report.outcome in ("computed", "reused"):
                self.done += 1
                status = report.action.meta.get("status") if report.action else None
                self.passed += status == "PASS"
                self.unjudged += status == "DONE"
            elif node.kind == "evaluate" and report.outcome == "failed":
                self.done += 1
                self.errors += 1
            if report.outcome == "failed":
                self.failed_nodes.append(node.id)
                self._live.console.print(f"failed {node.id}: {report.error}", markup=False)
            self._live.refresh()

    def __enter__(self) -> JobProgress:
        self._live.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._live.__exit__(kind, error, trace)
