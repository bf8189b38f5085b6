"""`model.jsonl`: every request and response through an attempt's gateway route
(`judge-model.jsonl`: its evaluation's LLM judges').

One JSON line per exchange, appended before the agent gets the end of its answer:
`{"seq", "time", "role", "method", "path", "request_digest", "request", "status",
"response"}`. `request` and `response` are the parsed JSON bodies (a streamed response is the
list of its server-sent `data:` payloads, parsed where they are JSON); `request_digest` is the
xxh3-128 of the raw request body. Headers are never recorded (they carry keys), and every
secret value of the attempt is masked (`***`) anywhere in the line.

A resumed attempt's log continues the kept file: its `seq` goes on from the lines already
there. The exchanges of the invocation a killed process cut short are set aside in
`model.abandoned.jsonl` when it resumes (see `runner.recovery.set_aside`).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import xxhash

from agevalx.redaction import Redactor

MODEL_TRAFFIC = "model.jsonl"
"""The file name, in `.ageval/runs/<attempt_id>/`."""
ABANDONED_TRAFFIC = "model.abandoned.jsonl"
"""Beside it: the exchanges of invocations a resume runs again, set aside."""
JUDGE_TRAFFIC = "judge-model.jsonl"
"""The evaluation's own file (its LLM judges' traffic), beside `model.jsonl`; stored in the
evaluate node's outputs (`judge_model`), so a re-scoring from cache keeps it."""


def _parsed(data: bytes) -> Any:
    try:
        return json.loads(data) if data else None
    except ValueError:
        return data.decode("utf-8", "replace")


def _events(data: bytes) -> list[Any]:
    events: list[Any] = []
    for line in data.split(b"\n"):
        line = line.strip()
        if line.startswith(b"data:"):
            payload = line[5:].strip()
            events.append(payload.decode() if payload == b"[DONE]" else _parsed(payload))
    return events


class TrafficLog:
    """An attempt's `model.jsonl`, shared by its roles' recorders."""

    def __init__(self, path: Path, redactor: Redactor) -> None:
        self.path = path
        self.redactor = redactor
        self._lock = threading.Lock()
        self._seq: int | None = None
        self._kept = 0

    def recorder(self, role: str) -> TrafficRecorder:
        return TrafficRecorder(self, role)

    @property
    def lines(self) -> int:
        """Exchanges in the file (those a resumed attempt kept included)."""
        with self._lock:
            return self._sequence()

    @property
    def kept(self) -> int:
        """The lines a resumed attempt kept: those in the file when this log was first used."""
        with self._lock:
            self._sequence()
            return self._kept

    def _sequence(self) -> int:
        if self._seq is None:  # the first use: continue what a resumed attempt kept
            try:
                self._kept = self.path.read_bytes().count(b"\n")
            except OSError:
                self._kept = 0
            self._seq = self._kept
        return self._seq

    def append(self, line: dict[str, Any]) -> None:
        with self._lock:
            self._seq = self._sequence() + 1
            text = json.dumps({"seq": self._seq, **line}, sort_keys=True, ensure_ascii=False)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(self.redactor.text(text) + "\n")


class TrafficRecorder:
    """Records one role's exchanges into the attempt's log."""

    def __init__(self, log: TrafficLog, role: str) -> None:
        self.log = log
        self.role = role

    def record(self, method: str, path: str, body: bytes, status: int, response: bytes) -> None:
        streamed = response.lstrip().startswith((b"data:", b"event:"))
        self.log.append(
            {
                "time": round(time.time(), 3),
                "role": self.role,
                "method": method,
                "path": path,
                "request_digest": xxhash.xxh3_128_hexdigest(body),
                "request": _parsed(body),
                "status": status,
                "response": _events(response) if streamed else _parsed(response),
                "streamed": streamed,
            }
        )
