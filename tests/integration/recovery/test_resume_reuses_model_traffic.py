"""kill -9 of `ageval run` while pi is mid-invocation, then `--resume`: the model requests the
upstream had answered before the kill are answered from the attempt's own model.jsonl, not
paid again; only the one in flight at the kill is sent again.

pi (the catalog agent, its real package) solves the catalog dataset's task in four model
turns, three `bash` tool calls and a closing message, against the scripted mock model. The
mock holds its third request: the test kills the ageval process there, resumes the attempt
in this process, and counts what the mock received after the kill.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agevalx.agents import bundles
from agevalx.agents.catalog.base import provider_named
from agevalx.agents.mockllm import MockLLM, MockRequest, MockResponse
from agevalx.cli import main
from agevalx.environments.engine import client
from agevalx.gateway.replaying import request_digest, steady
from tests.integration.agents.catalog.harness import AGEVAL_DATASET, bundles_dir, ensure_built
from tests.integration.conftest import this_workers

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
AGENT = ("--task", "write-answer", "--agent", "pi", "--model", "openai/gpt-5.4-mini")
STEPS = [
    {"tool_call": {"id": f"call_{n}", "name": "bash", "arguments": {"command": command}}}
    for n, command in enumerate(
        ["echo one >> steps.txt", "echo two >> steps.txt", "echo 42 > answer.txt"]
    )
] + [{"message": "I wrote 42 to answer.txt."}]
HELD = 2
"""The request (0-based) the mock holds, and the process is killed in."""


class HeldMock(MockLLM):
    """The mock model, holding its `HELD`-th model turn until `release` is set. The held
    request takes a scripted reply, so the script has that reply twice: the resumed attempt's
    request for the same turn gets the second copy."""

    def __init__(self) -> None:
        super().__init__([*STEPS[: HELD + 1], *STEPS[HELD:]])
        self.holding = threading.Event()
        self.release = threading.Event()
        self._held_turns = 0
        self.routes = tuple(
            dataclasses.replace(route, respond=self._holding(route.respond))
            if route.scripted
            else route
            for route in self.routes
        )

    def _holding(self, respond: Any) -> Any:
        def held(request: MockRequest) -> MockResponse:
            if request.reply is not None:
                with self._lock:
                    turn, self._held_turns = self._held_turns, self._held_turns + 1
                if turn == HELD:
                    self.holding.set()
                    self.release.wait(600)
            response: MockResponse = respond(request)
            return response

        return held


@pytest.fixture
def pi_environ(monkeypatch: pytest.MonkeyPatch, docker_engine: object) -> Iterator[None]:
    ensure_built("pi")
    monkeypatch.setenv(bundles.BUNDLES_ENV, str(bundles_dir()))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    provider = provider_named("openai")
    assert provider is not None
    monkeypatch.setenv(provider.key_variable, "sk-test-not-a-real-key")
    yield


def serve(monkeypatch: pytest.MonkeyPatch, mock: MockLLM) -> None:
    provider = provider_named("openai")
    assert provider is not None
    monkeypatch.setenv(provider.base_url_variable, f"http://localhost:{mock.port}/v1")


def dataset_copy(tmp_path: Path, name: str) -> Path:
    import shutil

    target = tmp_path / name
    shutil.copytree(AGEVAL_DATASET, target, ignore=shutil.ignore_patterns(".ageval"))
    return target


def traffic(directory: Path, name: str = "model.jsonl") -> list[dict[str, Any]]:
    path = directory / name
    return [json.loads(line) for line in path.read_text().splitlines()]


def digest(body: Any) -> str:
    return request_digest(steady(body))


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code = main([*args, "--json"])
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert code == 0, json.dumps(document, indent=2)
    return document


def test_a_resumed_attempt_pays_only_the_request_in_flight_at_the_kill(
    pi_environ: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A fault-free run: its usage and conversation are what the resumed attempt must end with.
    plain = dataset_copy(tmp_path, "plain")
    with MockLLM(STEPS) as mock:
        serve(monkeypatch, mock)
        (clean,) = run_json(capsys, "run", str(plain), *AGENT)["results"]
        assert len(mock.completions) == len(STEPS)
    assert clean["status"] == "PASS", clean
    clean_dir = plain / ".ageval/runs" / clean["attempt_id"]
    clean_usage = json.loads((clean_dir / "result.json").read_text())["usage"]

    dataset = dataset_copy(tmp_path, "killed")
    mock = HeldMock()
    with mock:
        serve(monkeypatch, mock)
        process = subprocess.Popen(
            [sys.executable, "-m", "agevalx", "run", str(dataset), *AGENT, "--json"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert mock.holding.wait(300), "pi never asked for its third model turn"
        finally:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
        before_kill = list(mock.completions)
        mock.release.set()  # the held answer goes to a dead gateway
        assert len(before_kill) == HELD + 1

        [directory] = (dataset / ".ageval/runs").iterdir()
        assert not (directory / "result.json").exists()
        assert len(traffic(directory)) == HELD, "the answered requests were recorded"
        document = run_json(capsys, "run", str(dataset), *AGENT, "--resume", directory.name)
        after_kill = mock.completions[len(before_kill) :]

    (result,) = document["results"]
    assert result["status"] == "PASS", result
    assert result["attempt_id"] == directory.name

    # The upstream got only the turns it had not answered: the one in flight, and the last.
    paid_twice = {digest(r.body) for r in before_kill} & {digest(r.body) for r in after_kill}
    assert len(after_kill) == len(STEPS) - HELD, [r.body for r in after_kill]
    assert paid_twice == {digest(before_kill[HELD].body)}
    clean_requests = [digest(line["request"]) for line in traffic(clean_dir)]
    assert [digest(r.body) for r in after_kill] == clean_requests[HELD:]
    print(f"re-sent requests: {len(paid_twice)} of {len(STEPS)}")

    # Usage as if nothing happened, except that it says which answers were reused;
    # model.jsonl is the whole conversation, once.
    stored = json.loads((directory / "result.json").read_text())
    assert stored["usage"]["solver"]["reused"] == HELD
    assert clean_usage["solver"]["reused"] == 0
    assert {**stored["usage"]["solver"], "reused": 0} == clean_usage["solver"]
    assert stored["usage"]["solver"]["requests"] == len(STEPS)
    conversation = traffic(directory)
    assert [line["seq"] for line in conversation] == list(range(1, len(STEPS) + 1))
    assert [digest(line["request"]) for line in conversation] == clean_requests
    set_aside = traffic(directory, "model.abandoned.jsonl")
    assert [digest(line["request"]) for line in set_aside] == [
        digest(line["request"]) for line in conversation[:HELD]
    ]
    labels = this_workers(f"ageval.attempt={directory.name}")
    assert client().containers.list(sparse=True, filters={"label": labels}) == []
