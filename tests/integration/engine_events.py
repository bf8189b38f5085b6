"""The engine's container events, recorded live for the whole test session.

A `since=` query gets only the engine's last 256 events, so on a busy engine (other tests,
other runs) a count of created containers or agent execs could miss some and pass falsely.
The integration conftest starts `EVENTS` once per session; tests count what it saw."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from agevalx.environments.engine import client

Event = dict[str, Any]


class EngineEvents:
    """Every container `create` and `exec_create` event, from `start()` on."""

    def __init__(self) -> None:
        self._events: list[Event] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None:
            return
        stream = client().events(
            decode=True, filters={"type": "container", "event": ["create", "exec_create"]}
        )
        self._thread = threading.Thread(target=self._follow, args=(stream,), daemon=True)
        self._thread.start()

    def _follow(self, stream: Any) -> None:
        for event in stream:
            with self._lock:
                self._events.append(event)

    def since(self, seconds: float, action: str, match: Callable[[Event], bool]) -> list[Event]:
        """Events of `action` (`create`, or `exec_create` whatever the command) at or after
        `seconds` (epoch) that `match` accepts."""
        assert self._thread is not None, "EVENTS.start() before the run"
        time.sleep(1.0)  # let the stream deliver the last events of the run
        with self._lock:
            events = list(self._events)
        return [
            event
            for event in events
            if int(event.get("timeNano", 0)) >= seconds * 1e9
            and str(event.get("Action", "")).split(":")[0] == action
            and match(event)
        ]

    def created(self, seconds: float, label: str, value: str) -> list[str]:
        """Names of the containers created since `seconds` whose `label` is `value`."""
        events = self.since(seconds, "create", lambda event: attributes(event).get(label) == value)
        return [str(attributes(event).get("name", "")) for event in events]


def attributes(event: Event) -> dict[str, Any]:
    attrs: dict[str, Any] = event.get("Actor", {}).get("Attributes", {})
    return attrs


EVENTS = EngineEvents()


@contextlib.contextmanager
def watching(filters: dict[str, Any]) -> Iterator[list[Event]]:
    """The engine's events matching `filters` while the block runs, as they come (for a
    test that needs more than `EVENTS` records: other kinds, other types)."""
    events: list[Event] = []
    stream = client().events(decode=True, filters=filters)

    def follow() -> None:
        with contextlib.suppress(Exception):  # the stream is closed under it at the end
            for event in stream:
                events.append(event)

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    try:
        yield events
    finally:
        time.sleep(1.0)  # the last events of the run
        stream.close()
        thread.join(5)
