"""Replay does not compare what opencode and OpenClaw write into their requests from the
clock, their session ids and the container's hostname; it still compares everything else."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agevalx.gateway.recording import TrafficLog
from agevalx.gateway.replaying import ModelDivergence, TrafficReplay
from agevalx.redaction import Redactor

pytestmark = pytest.mark.unit

PATH = "/v1/chat/completions"


def _opencode(day: str, task: str = "Write 42 to /tmp/answer.txt.") -> dict[str, Any]:
    system = f"<env>\n  Working directory: /\n  Platform: linux\n  Today's date: {day}\n</env>"
    return {"messages": [{"role": "system", "content": system}, {"role": "user", "content": task}]}


def _openclaw(minute: str, bridge: str, session: str, host: str) -> dict[str, Any]:
    system = f"## Temporal Context\nCurrent date: 2026-12-0{minute[0]}\nTime zone: UTC"
    prompt = (
        f"[Thu 2026-12-03 06:{minute} UTC] [Working directory: /attempt/workspace]\n\n"
        "Write 42 to /tmp/answer.txt.\n\nRuntime: agent=main | "
        f"session=agent:main:acp-bridge:{bridge} | sessionId={session} | host={host} | "
        "os=Linux (x64) | node=v24.22.3"
    )
    return {
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
    }


def _replay(tmp_path: Path, recorded: dict[str, Any]) -> TrafficReplay:
    path = tmp_path / "model.jsonl"
    TrafficLog(path, Redactor([])).recorder("solver").record(
        "POST", PATH, json.dumps(recorded).encode(), 200, b"{}"
    )
    return TrafficReplay.read(path, Redactor([]))


def _answer(replay: TrafficReplay, request: dict[str, Any]) -> Any:
    return replay.answer("solver", "POST", PATH, json.dumps(request).encode())


BRIDGE_A, BRIDGE_B = "d39b9a0a-6901-4975-b5ec-95e8f3086040", "628ea3d2-5dde-469e-af0a-ffcd952ab378"
SESSION_A, SESSION_B = (
    "377786b3-a381-4405-ade2-9256927b99e5",
    "d842038d-4791-4e3a-94fb-a291117485b1",
)


def test_opencode_replays_on_another_day(tmp_path: Path) -> None:
    replay = _replay(tmp_path, _opencode("Thu Dec 03 2026"))
    assert not isinstance(_answer(replay, _opencode("Fri Dec 04 2026")), ModelDivergence)
    replay = _replay(tmp_path / "other", _opencode("Thu Dec 03 2026"))
    divergence = _answer(replay, _opencode("Fri Dec 04 2026", task="Write 43."))
    assert isinstance(divergence, ModelDivergence) and "Write 43." in divergence.difference


def test_openclaw_replays_in_another_minute_session_and_container(tmp_path: Path) -> None:
    replay = _replay(tmp_path, _openclaw("24", BRIDGE_A, SESSION_A, "2dc4c9c30615"))
    again = _openclaw("31", BRIDGE_B, SESSION_B, "451ff9787e9d")
    assert not isinstance(_answer(replay, again), ModelDivergence)


def test_openclaw_replay_still_compares_the_rest_of_the_runtime_line(tmp_path: Path) -> None:
    replay = _replay(tmp_path, _openclaw("24", BRIDGE_A, SESSION_A, "2dc4c9c30615"))
    other = _openclaw("24", BRIDGE_A, SESSION_A, "2dc4c9c30615")
    other["messages"][1]["content"] = other["messages"][1]["content"].replace("v24", "v26")
    divergence = _answer(replay, other)
    assert (
        isinstance(divergence, ModelDivergence) and "/messages/1/content" in divergence.difference
    )
