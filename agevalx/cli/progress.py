"""The live progress display of `ageval run` on a terminal."""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType

from rich.live import Live
from rich.text import Text

from agevalx.cli.render import real_console, stderr
from agevalx.gateway.budget import JobBudget
from agevalx.graph.execute import NodeReport
from agevalx.graph.nodes import Node
from agevalx.graph.plan import Plan


def _concurrency_line() -> str:
    """The model gateway's limits per upstream, when this process runs one (the gateway's
    module is imported only by a job with a model: never imported here for the line)."""
    server = sys.modules.get("agevalx.gateway.server")
    return str(server.concurrency_line()) if server is not None else ""


class JobProgress:
    """Attempts done, per stage (run ended / running, evaluate running) and queued, pass rate
    so far, elapsed time and an ETA; with
    model traffic, the job's cost and tokens so far and the gateway's concurrency per
    upstream; refreshed live."""

    def __init__(self, budget: JobBudget | None = None) -> None:
        self.budget = budget
        self.started = time.monotonic()
        self.computed = 0
        """Attempts this process finished computing (the ETA's rate; reused ones are instant)."""
        self.total = 0
        self.running: set[str] = set()
        """Run nodes running now."""
        self.scoring: set[str] = set()
        """Evaluate nodes running now."""
        self.ran = 0
        """Attempts whose run stage has ended (an attempt between its run and its evaluation
        stays counted here: it never goes back to queued)."""
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
        queued = max(0, self.total - self.ran - len(self.running))
        judged = self.done - self.unjudged
        rate = f"{self.passed / judged:.0%}" if judged else "-"
        line = (
            f"attempts: {self.done}/{self.total} done | run {self.ran}/{self.total}, "
            f"{len(self.running)} running | evaluate {len(self.scoring)} running | "
            f"{queued} queued | pass rate {rate} | errors {self.errors} | {elapsed:5.0f}s"
        )
        left = self.total - self.done
        if self.computed and left > 0:
            line += f" | ETA {_duration(elapsed / self.computed * left)}"
        budget = self.budget
        if budget is not None and budget.requests:
            line += f" | {budget.describe()}, {budget.tokens:,} tokens"
        concurrency = _concurrency_line()
        return Text(line + ("\n" + concurrency if concurrency else ""))

    def planned(self, plan: Plan) -> None:
        with self._lock:
            # The `pass` strategy plans one round at a time: a round adds to what is done.
            self.total = self.done + sum(1 for node in plan.nodes() if node.kind == "run")
            self._live.refresh()

    def start(self, node: Node) -> None:
        with self._lock:
            if node.kind == "run":
                self.running.add(node.id)
            elif node.kind == "evaluate":
                self.scoring.add(node.id)
            self._live.refresh()

    def finish(self, report: NodeReport) -> None:
        with self._lock:
            node = report.node
            if node.kind == "run":
                self.running.discard(node.id)
                self.ran += report.outcome != "skipped"
                if report.outcome in ("failed", "blocked"):
                    self.done += 1
                    self.errors += 1
            if node.kind == "evaluate":
                self.scoring.discard(node.id)
            if node.kind == "evaluate" and report.outcome in ("computed", "failed"):
                self.computed += 1
            if node.kind == "evaluate" and report.outcome in ("computed", "reused"):
                self.done += 1
                status = report.action.meta.get("status") if report.action else None
                self.passed += status == "PASS"
                self.unjudged += status == "DONE"
            elif node.kind == "evaluate" and report.outcome == "failed":
                self.done += 1
                self.errors += 1
            if node.kind == "run" and report.outcome == "skipped":
                self.total -= 1  # not run: the spend limit held it back
            if report.outcome == "failed":
                self.failed_nodes.append(node.id)
                self._live.console.print(f"failed {node.id}: {report.error}", markup=False)
            for error in report.tries:
                self._live.console.print(
                    f"retried {node.id} after [{error.code}] {error.message}", markup=False
                )
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


def _duration(seconds: float) -> str:
    """`45s`, `12m`, `3h05m`."""
    if seconds < 90:
        return f"{seconds:.0f}s"
    if seconds < 5400:
        return f"{seconds / 60:.0f}m"
    return f"{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m"
