"""The ACP SDK's log records: kept in the invocation's transcript, never printed.

The SDK logs with the root logger (`logging.exception(...)`, a traceback included) whenever
an agent sends something it cannot handle: a notification whose params do not validate, a
request our client fails, a message it cannot route. ageval reports an agent's protocol
failures itself, with a code; so a filter on the root logger takes every record logged from
the SDK's package off it and hands it to the transcript of the invocation in whose context
it was logged (a context variable: invocations run concurrently, each in its own loop).
Because the SDK's module-level calls `basicConfig()` a root logger that has no handler, a
stand-in handler that behaves like having none is put there first.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import acp

SDK_DIR = str(Path(acp.__file__).parent) + os.sep
"""Records whose source file is under it come from the SDK."""

MESSAGE_LIMIT = 2000
"""Characters of a record's message (and of its exception) kept in the transcript."""

Sink = Callable[[dict[str, Any]], None]

_sink: ContextVar[Sink | None] = ContextVar("ageval_acp_sdk_log_sink", default=None)


class _SdkRecords(logging.Filter):
    """Passes every record but the SDK's; those go to the current invocation's sink."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.pathname.startswith(SDK_DIR):
            return True
        sink = _sink.get()
        if sink is not None:
            entry: dict[str, Any] = {
                "type": "acp_sdk_log",
                "level": record.levelname,
                "message": record.getMessage()[:MESSAGE_LIMIT],
            }
            if record.exc_info and record.exc_info[1] is not None:
                error = record.exc_info[1]
                entry["error"] = f"{type(error).__name__}: {error}"[:MESSAGE_LIMIT]
            with contextlib.suppress(Exception):  # the recorder keeps its own failure
                sink(entry)
        return False


class _AsWithoutHandlers(logging.Handler):
    """Stands in on a root logger that has no handler: the SDK's module-level calls
    (`logging.exception`) would otherwise `basicConfig()` one, and every later warning of
    any library would be printed in its format. A record reaches `logging.lastResort` here
    exactly when it would with no root handler: when no logger below root handled it."""

    def emit(self, record: logging.LogRecord) -> None:
        last_resort = logging.lastResort
        if last_resort is None or record.levelno < last_resort.level:
            return
        logger: logging.Logger | None = logging.getLogger(record.name)
        while logger is not None and logger is not logging.root:
            if logger.handlers:
                return
            logger = logger.parent
        last_resort.handle(record)


_FILTER = _SdkRecords()
_INSTALL = threading.Lock()


@contextlib.contextmanager
def sdk_logs_to(sink: Sink) -> Iterator[None]:
    """Within the block (and the tasks it starts), the SDK's records go to `sink` instead of
    any handler; outside any block they are dropped."""
    root = logging.getLogger()
    with _INSTALL:
        if _FILTER not in root.filters:
            root.addFilter(_FILTER)
            if not root.handlers:
                root.addHandler(_AsWithoutHandlers())
    token = _sink.set(sink)
    try:
        yield
    finally:
        _sink.reset(token)
