"""An exec's exit code is waited for as long as a loaded engine takes to record it."""

from __future__ import annotations

import time
from typing import Any

import pytest

from agevalx.environments.container import exec_exit_code

pytestmark = pytest.mark.unit


class SlowEngine:
    """Reports the exec running, then ended with no code, until `after` seconds have passed."""

    def __init__(self, after: float, code: int) -> None:
        self.after, self.code = after, code
        self.asked = 0
        self.started = time.monotonic()

    def exec_inspect(self, exec_id: str) -> dict[str, Any]:
        self.asked += 1
        elapsed = time.monotonic() - self.started
        if elapsed < self.after / 2:
            return {"Running": True, "ExitCode": None}
        if elapsed < self.after:
            return {"Running": False, "ExitCode": None}
        return {"Running": False, "ExitCode": self.code}


def test_an_exit_code_recorded_late_by_a_loaded_engine_is_still_read() -> None:
    engine = SlowEngine(after=2.5, code=0)
    assert exec_exit_code(engine, "exec") == 0
    assert engine.asked < 75  # less and less often after a second, not 20 times a second


def test_an_exit_code_recorded_at_once_is_read_at_once() -> None:
    engine = SlowEngine(after=0.0, code=3)
    assert exec_exit_code(engine, "exec") == 3
    assert engine.asked == 1


def test_an_exit_code_that_never_comes_is_unknown() -> None:
    engine = SlowEngine(after=60.0, code=0)
    started = time.monotonic()
    assert exec_exit_code(engine, "exec", wait=0.3) == -1
    assert time.monotonic() - started < 1.0
