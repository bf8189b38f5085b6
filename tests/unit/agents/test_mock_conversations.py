"""The mock model per conversation (each conversation gets the script from its start, `{{run}}`
from its first user message) and its faults (stalls, 429 and 503 runs), over HTTP on
loopback."""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from agevalx.agents.mockllm import (
    MockLLM,
    MockLLMError,
    assistant_turns,
    parse_faults,
    run_line,
)

pytestmark = pytest.mark.unit


SCRIPT: list[dict[str, Any]] = [
    {"tool_call": {"name": "bash", "arguments": {"command": "{{run}}"}}},
    {"message": "done: {{run}}"},
]


def _chat(*messages: dict[str, Any], stream: bool = False) -> dict[str, Any]:
    return {"model": "m", "messages": list(messages), "stream": stream}


def _post(mock: MockLLM, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(
        f"{mock.url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


USER = (
    {"role": "system", "content": "be brief"},
    {
        "role": "user",
        "content": [{"type": "text", "text": "Do this.\n\nRUN: echo 7 > answer.txt\n"}],
    },
)
CALLED = {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function"}]}
RESULT = {"role": "tool", "tool_call_id": "c", "content": "ok"}


def test_every_conversation_gets_the_script_from_its_start_with_its_run_line() -> None:
    with MockLLM(SCRIPT, per_conversation=True) as mock:
        for _ in range(3):  # three conversations at their first turn: each gets step 0
            status, _, raw = _post(mock, _chat(*USER))
            assert status == 200
            call = json.loads(raw)["choices"][0]["message"]["tool_calls"][0]["function"]
            assert json.loads(call["arguments"]) == {"command": "echo 7 > answer.txt"}
        status, _, raw = _post(mock, _chat(*USER, CALLED, RESULT))
        assert json.loads(raw)["choices"][0]["message"]["content"] == "done: echo 7 > answer.txt"
        # Past the script's end the last step repeats.
        status, _, raw = _post(mock, _chat(*USER, CALLED, RESULT, CALLED, RESULT))
        assert json.loads(raw)["choices"][0]["message"]["content"] == "done: echo 7 > answer.txt"
        assert mock.remaining == len(SCRIPT)  # the shared script is never consumed
        # 10 prompt tokens a reply; 8 for a tool call, a word each for "done: echo 7 > answer.txt"
        assert mock.billed_tokens == 3 * (10 + 8) + 2 * (10 + 5)


def test_assistant_turns_are_counted_in_every_api_shape() -> None:
    responses = {
        "input": [
            {"role": "user", "content": "RUN: ls"},
            {"type": "reasoning"},
            {"type": "function_call", "name": "bash"},
            {"type": "function_call", "name": "bash"},
            {"type": "function_call_output", "output": "x"},
            {"role": "assistant", "content": "hm"},
        ]
    }
    assert assistant_turns(responses) == 2
    gemini = {"contents": [{"role": "user", "parts": [{"text": "a\nRUN: pwd"}]}, {"role": "model"}]}
    assert assistant_turns(gemini) == 1 and run_line(gemini) == "pwd"
    assert assistant_turns({"messages": [{"role": "user", "content": "hi"}]}) == 0
    assert run_line({"messages": [{"role": "user", "content": "no command"}]}) is None
    assert assistant_turns(None) == 0


def test_429_and_503_runs_are_refused_with_retry_after_then_served() -> None:
    faults = [
        {"kind": "429", "start": 1, "count": 2, "retry_after": 1},
        {"kind": "503", "start": 4, "count": 1},
    ]
    with MockLLM(SCRIPT, per_conversation=True, faults=faults) as mock:
        answers = [_post(mock, _chat(*USER)) for _ in range(6)]
        assert [status for status, _, _ in answers] == [200, 429, 429, 200, 503, 200]
        assert answers[1][1]["Retry-After"] == "1"
        assert "Retry-After" not in answers[4][1]
        assert mock.faults_served == {"429": 2, "503": 1}
        assert mock.billed_tokens == 3 * (10 + 8)  # refused turns are not billed


def test_a_stalled_stream_stops_mid_response_and_is_cut() -> None:
    with MockLLM(
        SCRIPT, per_conversation=True, faults=[{"kind": "stall", "at": [0], "seconds": 1.5}]
    ) as mock:
        connection = http.client.HTTPConnection("127.0.0.1", mock.port, timeout=10)
        body = json.dumps(_chat(*USER, stream=True))
        started = time.monotonic()
        connection.request(
            "POST", "/v1/chat/completions", body, {"Content-Type": "application/json"}
        )
        response = connection.getresponse()
        assert response.status == 200
        with pytest.raises(http.client.IncompleteRead) as cut:
            response.read()
        assert time.monotonic() - started >= 1.4
        assert b"data: " in cut.value.partial and b"[DONE]" not in cut.value.partial
        assert mock.faults_served == {"stall": 1}
        # The next turn is served whole.
        status, _, raw = _post(mock, _chat(*USER, stream=True))
        assert status == 200 and raw.rstrip().endswith(b"data: [DONE]")


@pytest.mark.parametrize(
    ("faults", "message"),
    [
        ([{"kind": "404", "start": 0, "count": 1}], "kind must be one of"),
        ([{"kind": "stall", "at": [], "seconds": 1}], "at must be a list"),
        ([{"kind": "stall", "at": [1], "seconds": -1}], "seconds must be seconds"),
        ([{"kind": "429", "start": 0, "count": 0}], "count (> 0)"),
        ([{"kind": "503", "start": 0, "count": 1, "every": 2}], "unknown keys ['every']"),
        (["429"], "is not a mapping"),
    ],
)
def test_a_bad_fault_list_is_refused(faults: list[Any], message: str) -> None:
    with pytest.raises(MockLLMError, match=None) as refused:
        parse_faults(faults)
    assert message in str(refused.value)


def test_ageval_mock_model_refuses_a_bad_fault_file_with_its_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agevalx.cli import main

    script = tmp_path / "script.yaml"
    script.write_text("- message: hi\n")
    faults = tmp_path / "faults.yaml"
    faults.write_text("- kind: stall\n  at: [1]\n  seconds: forever\n")
    code = main(["mock-model", str(script), "--per-conversation", "--faults", str(faults)])
    err = capsys.readouterr().err
    assert code != 0
    assert "mock_faults_invalid" in err and "seconds must be seconds" in err
    assert "Traceback" not in err
