from __future__ import annotations

import asyncio

import pytest

from agevalx.aio import run_sync

pytestmark = pytest.mark.unit


async def _answer() -> int:
    await asyncio.sleep(0)
    return 42


async def _fail() -> None:
    raise ValueError("from the coroutine")


def test_run_sync_runs_a_coroutine_from_plain_code() -> None:
    assert run_sync(_answer) == 42


def test_run_sync_works_where_an_event_loop_already_runs() -> None:
    async def caller() -> int:
        refused = _answer()
        with pytest.raises(RuntimeError):  # what asyncio.run alone would do here
            asyncio.run(refused)
        refused.close()
        return run_sync(_answer)

    assert asyncio.run(caller()) == 42


def test_run_sync_raises_the_coroutines_error_in_both_cases() -> None:
    with pytest.raises(ValueError, match="from the coroutine"):
        run_sync(_fail)

    async def caller() -> None:
        run_sync(_fail)

    with pytest.raises(ValueError, match="from the coroutine"):
        asyncio.run(caller())
