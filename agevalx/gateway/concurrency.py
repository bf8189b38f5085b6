"""Adaptive model concurrency: per upstream (base URL and model), a limit on the requests in
flight that starts low, grows while requests succeed and halves on a 429.

Additive increase, multiplicative decrease (as TCP's congestion window): the limit starts at
`INITIAL_LIMIT`, grows by one after `limit` successes in a row, and halves (never below 1) on
a 429, once per burst: the 429s of requests sent before the last decrease do not halve it
again. A 429's `Retry-After` holds every new request to that upstream until it has passed. A
5xx or a connection error leaves the limit as it is: it says nothing about load. Requests over
the limit wait in order; how long they wait counts against the route's stall budget.

Everything runs on the gateway's event loop: no locking beyond asyncio's.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Literal

INITIAL_LIMIT = 4
MAX_LIMIT = 64
MIN_LIMIT = 1
POLL_SECONDS = 0.25
"""A waiting request looks again at least this often (a freed slot wakes it sooner)."""

Outcome = Literal["ok", "throttled", "failed"]


@dataclass
class Slot:
    """A request's place under the limit: the limit's epoch when it was taken."""

    epoch: int


@dataclass
class Limiter:
    """One upstream's limit and its figures."""

    origin: str
    model: str
    started: float = field(default_factory=time.monotonic)
    """When the gateway started: the curve's times count from it."""
    limit: int = INITIAL_LIMIT
    peak: int = INITIAL_LIMIT
    in_flight: int = 0
    throttled: int = 0
    """429s received."""
    curve: list[list[float]] = field(default_factory=list)
    """[seconds since the gateway started, limit] at the start and at every change."""
    _successes: int = 0
    _epoch: int = 0
    _paused_until: float = 0.0
    _waiters: collections.deque[object] = field(default_factory=collections.deque)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self._mark()

    def _mark(self) -> None:
        self.curve.append([round(time.monotonic() - self.started, 2), self.limit])

    def _free(self) -> bool:
        return self.in_flight < self.limit and time.monotonic() >= self._paused_until

    async def acquire(self, timeout: float) -> Slot | None:
        """A slot once the limit allows (and no Retry-After holds the upstream), in the order
        requests asked; None when `timeout` seconds pass first."""
        deadline = time.monotonic() + max(0.0, timeout)
        place = object()
        self._waiters.append(place)
        try:
            while not (self._waiters[0] is place and self._free()):
                now = time.monotonic()
                if now >= deadline:
                    return None
                changed = self._changed
                wake = min(deadline, max(self._paused_until, now + POLL_SECONDS)) - now
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), max(0.0, wake))
        finally:
            self._waiters.remove(place)
        self.in_flight += 1
        self._wake()  # the next in line may fit too
        return Slot(self._epoch)

    def release(self, slot: Slot, outcome: Outcome, retry_after: float | None = None) -> None:
        """The request of `slot` ended: `ok`, `throttled` (a 429) or `failed` (5xx, error)."""
        self.in_flight = max(0, self.in_flight - 1)
        if outcome == "ok":
            self._successes += 1
            if self._successes >= self.limit and self.limit < MAX_LIMIT:
                self.limit += 1
                self._successes = 0
                self.peak = max(self.peak, self.limit)
                self._mark()
        elif outcome == "throttled":
            self.throttled += 1
            self._successes = 0
            if slot.epoch == self._epoch and self.limit > MIN_LIMIT:  # a burst's first 429
                self._epoch += 1
                self.limit = max(MIN_LIMIT, self.limit // 2)
                self._mark()
            if retry_after:
                self._paused_until = max(self._paused_until, time.monotonic() + retry_after)
        self._wake()

    def _wake(self) -> None:
        """Let the waiting requests look again (the first in line takes a free slot)."""
        self._changed.set()
        self._changed = asyncio.Event()

    def figures(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "model": self.model,
            "limit": self.limit,
            "peak": self.peak,
            "final": self.limit,
            "in_flight": self.in_flight,
            "throttled": self.throttled,
            "curve": [list(point) for point in self.curve],
        }


class Concurrency:
    """The limiters of one gateway, by upstream."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self._limiters: dict[tuple[str, str], Limiter] = {}

    def limiter(self, origin: str, model: str) -> Limiter:
        key = (origin, model)
        found = self._limiters.get(key)
        if found is None:
            found = self._limiters[key] = Limiter(origin, model, started=self.started)
        return found

    def figures(self) -> list[dict[str, Any]]:
        return [limiter.figures() for limiter in self._limiters.values()]

    def line(self) -> str:
        """One line for the live progress; empty before the first request."""
        parts = [
            f"{limiter.model}@{_host(limiter.origin)} limit {limiter.limit} "
            f"(peak {limiter.peak}, {limiter.in_flight} in flight"
            + (f", {limiter.throttled} throttled)" if limiter.throttled else ")")
            for limiter in self._limiters.values()
        ]
        return "model concurrency: " + "; ".join(parts) if parts else ""


def _host(origin: str) -> str:
    return origin.split("://", 1)[-1]
