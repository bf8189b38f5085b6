"""The test S3 server decides a race of create-only writes for exactly one writer, as S3 does.

moto checks whether a key exists and stores it later with nothing between the two, so the
server wraps it. These tests stand a slow check-then-store app in for moto: without the
wrapper two racing writers both win.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from agevalx.cache.remote.s3server import _CreatesOneAtATime

pytestmark = pytest.mark.unit


class _CheckThenStore:
    """A WSGI app that, like moto, checks a key and stores it a moment later."""

    def __init__(self, store_after: float = 0.02) -> None:
        self.keys: dict[str, str] = {}
        self.store_after = store_after

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        key = environ["PATH_INFO"]
        if environ.get("HTTP_IF_NONE_MATCH") == "*" and key in self.keys:
            start_response("412 Precondition Failed", [])
            return [b""]
        time.sleep(self.store_after)
        self.keys[key] = environ["writer"]
        start_response("200 OK", [])
        return [b""]


def _race(app: Any, method: str, conditional: bool, writers: int = 6) -> list[str]:
    statuses: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(writers)

    def write(n: int) -> None:
        environ = {"REQUEST_METHOD": method, "PATH_INFO": "/bucket/key", "writer": str(n)}
        if conditional:
            environ["HTTP_IF_NONE_MATCH"] = "*"
        start.wait()

        def start_response(status: str, headers: list[Any]) -> None:
            with lock:
                statuses.append(status.split()[0])

        list(app(environ, start_response))

    with ThreadPoolExecutor(writers) as pool:
        list(pool.map(write, range(writers)))
    return statuses


def test_without_the_wrapper_a_race_has_more_than_one_winner() -> None:
    assert _race(_CheckThenStore(), "PUT", conditional=True).count("200") > 1


@pytest.mark.parametrize("method", ["PUT", "POST"])
def test_a_race_of_conditional_writes_has_exactly_one_winner(method: str) -> None:
    statuses = _race(_CreatesOneAtATime(_CheckThenStore()), method, conditional=True)
    assert sorted(statuses) == ["200"] + ["412"] * 5


def test_other_requests_are_not_held_one_at_a_time() -> None:
    app = _CreatesOneAtATime(_CheckThenStore(store_after=0.5))
    began = time.monotonic()
    statuses = _race(app, "PUT", conditional=False)
    assert statuses == ["200"] * 6
    assert time.monotonic() - began < 6 * 0.5 / 2  # one at a time would take 3 s
