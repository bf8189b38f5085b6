"""The gateway's adaptive concurrency per upstream: it starts low, grows by one after `limit`
successes, halves once per burst of 429s, honours Retry-After, and holds requests over the
limit in order."""

from __future__ import annotations

import asyncio
import time

import pytest

from agevalx.gateway.concurrency import (
    INITIAL_LIMIT,
    MAX_LIMIT,
    Concurrency,
    Limiter,
)

pytestmark = pytest.mark.unit


def _run(coroutine):  # type: ignore[no-untyped-def]
    return asyncio.run(coroutine)


def test_the_limit_grows_by_one_after_limit_successes_up_to_the_maximum() -> None:
    async def scenario() -> Limiter:
        limiter = Limiter("http://up", "m")
        for _ in range(INITIAL_LIMIT):
            limiter.release(await limiter.acquire(1), "ok")
        assert limiter.limit == INITIAL_LIMIT + 1
        for _ in range(5000):
            limiter.release(await limiter.acquire(1), "ok")
        return limiter

    limiter = _run(scenario())
    assert limiter.limit == MAX_LIMIT and limiter.peak == MAX_LIMIT
    assert [limit for _, limit in limiter.curve][:3] == [4, 5, 6]


def test_a_burst_of_429s_halves_once_and_5xx_changes_nothing() -> None:
    async def scenario() -> Limiter:
        limiter = Limiter("http://up", "m")
        slots = [await limiter.acquire(1) for _ in range(4)]
        assert all(slots) and limiter.in_flight == 4
        for slot in slots:  # four requests of one burst, all refused
            assert slot is not None
            limiter.release(slot, "throttled")
        assert limiter.limit == 2 and limiter.throttled == 4
        slot = await limiter.acquire(1)
        assert slot is not None
        limiter.release(slot, "failed")
        assert limiter.limit == 2
        for _ in range(3):  # a later burst halves again, never below one
            slot = await limiter.acquire(1)
            assert slot is not None
            limiter.release(slot, "throttled")
        return limiter

    limiter = _run(scenario())
    assert limiter.limit == 1
    assert [limit for _, limit in limiter.curve] == [4, 2, 1]


def test_requests_over_the_limit_wait_in_order_and_time_out() -> None:
    async def scenario() -> tuple[list[int], bool]:
        limiter = Limiter("http://up", "m", limit=1)
        order: list[int] = []
        first = await limiter.acquire(1)
        assert first is not None

        async def request(number: int) -> None:
            slot = await limiter.acquire(5)
            assert slot is not None
            order.append(number)
            await asyncio.sleep(0.01)
            limiter.release(slot, "failed")

        waiting = [asyncio.create_task(request(n)) for n in range(3)]
        await asyncio.sleep(0.05)
        assert order == [] and limiter.in_flight == 1
        limiter.release(first, "failed")
        await asyncio.gather(*waiting)
        held = await limiter.acquire(1)
        assert held is not None
        timed_out = await limiter.acquire(0.1) is None
        return order, timed_out

    order, timed_out = _run(scenario())
    assert order == [0, 1, 2]
    assert timed_out


def test_retry_after_holds_every_new_request_to_the_upstream() -> None:
    async def scenario() -> float:
        limiter = Limiter("http://up", "m")
        slot = await limiter.acquire(1)
        assert slot is not None
        limiter.release(slot, "throttled", retry_after=0.4)
        started = time.monotonic()
        again = await limiter.acquire(5)
        assert again is not None
        return time.monotonic() - started

    assert _run(scenario()) >= 0.35


def test_figures_and_the_progress_line_name_each_upstream() -> None:
    concurrency = Concurrency()
    assert concurrency.line() == "" and concurrency.figures() == []
    limiter = concurrency.limiter("http://127.0.0.1:9/v1", "soak-model")
    assert concurrency.limiter("http://127.0.0.1:9/v1", "soak-model") is limiter
    (figure,) = concurrency.figures()
    assert figure == {
        "origin": "http://127.0.0.1:9/v1",
        "model": "soak-model",
        "limit": INITIAL_LIMIT,
        "peak": INITIAL_LIMIT,
        "final": INITIAL_LIMIT,
        "in_flight": 0,
        "throttled": 0,
        "curve": [[pytest.approx(0, abs=0.5), INITIAL_LIMIT]],
    }
    assert concurrency.line() == (
        "model concurrency: soak-model@127.0.0.1:9/v1 limit 4 (peak 4, 0 in flight)"
    )
