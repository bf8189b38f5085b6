"""Running a coroutine to completion from synchronous code, whatever the calling thread does."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """`asyncio.run(make())`; when an event loop already runs in this thread (a notebook, a
    synchronous Playwright session, a caller of ageval's API inside async code), the coroutine
    runs on a loop of its own in a new thread, and this thread waits for it."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    outcome: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(asyncio.run(make()))
        except BaseException as error:
            failure.append(error)

    thread = threading.Thread(target=target, name="ageval-async", daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]
