"""The mock model speaks the Gemini API: generateContent, its streaming forms, countTokens."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from agevalx.agents.mockllm import MockLLM

pytestmark = pytest.mark.unit

SCRIPT: list[dict[str, Any]] = [
    {"tool_call": {"name": "run_shell_command", "arguments": {"command": "echo hi"}}},
    {"message": "All done here."},
]
MODEL_PATH = "/v1beta/models/gemini-2.5-flash"
CALL = {"id": "call_0_0", "name": "run_shell_command", "args": {"command": "echo hi"}}


@pytest.fixture
def mock() -> Iterator[MockLLM]:
    with MockLLM(SCRIPT) as server:
        yield server


def _post(mock: MockLLM, path: str, body: Any) -> tuple[str, bytes]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{mock.port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "x-goog-api-key": "token"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers.get("Content-Type", ""), response.read()


def _events(data: bytes) -> list[dict[str, Any]]:
    return [
        json.loads(line[5:])
        for line in data.decode().splitlines()
        if line.startswith("data:") and line[5:].strip()
    ]


def _parts(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [part for chunk in chunks for part in chunk["candidates"][0]["content"]["parts"]]


BODY = {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}


def test_generate_content_answers_a_tool_call_as_a_function_call_part(mock: MockLLM) -> None:
    kind, data = _post(mock, f"{MODEL_PATH}:generateContent", BODY)
    answer = json.loads(data)
    assert kind.startswith("application/json")
    assert answer["candidates"][0]["content"]["parts"] == [{"functionCall": CALL}]
    assert answer["candidates"][0]["finishReason"] == "STOP"
    assert answer["modelVersion"] == "gemini-2.5-flash"
    assert answer["usageMetadata"] == {
        "promptTokenCount": 10,
        "candidatesTokenCount": 8,
        "cachedContentTokenCount": 0,
        "totalTokenCount": 18,
    }


def test_stream_generate_content_with_alt_sse_sends_chunks_as_events(mock: MockLLM) -> None:
    _post(mock, f"{MODEL_PATH}:generateContent", BODY)  # the tool call
    kind, data = _post(mock, f"{MODEL_PATH}:streamGenerateContent?alt=sse", BODY)
    chunks = _events(data)
    assert kind.startswith("text/event-stream")
    assert b"[DONE]" not in data
    assert "".join(part.get("text", "") for part in _parts(chunks)) == "All done here."
    assert len(chunks) == 4  # three words, then the finish
    assert all("usageMetadata" not in chunk for chunk in chunks[:-1])
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert chunks[-1]["usageMetadata"]["candidatesTokenCount"] == 3


def test_stream_generate_content_without_alt_sse_is_a_json_array(mock: MockLLM) -> None:
    kind, data = _post(mock, f"{MODEL_PATH}:streamGenerateContent", BODY)
    chunks = json.loads(data)
    assert kind.startswith("application/json")
    assert isinstance(chunks, list)
    calls = [part["functionCall"] for part in _parts(chunks) if "functionCall" in part]
    assert calls == [CALL]
    assert chunks[-1]["usageMetadata"]["promptTokenCount"] == 10


def test_count_tokens_does_not_consume_the_script(mock: MockLLM) -> None:
    _, data = _post(mock, f"{MODEL_PATH}:countTokens", BODY)
    assert json.loads(data) == {"totalTokens": 10}
    assert mock.remaining == 2
    assert mock.completions == []
    _post(mock, f"{MODEL_PATH}:generateContent", BODY)
    assert mock.remaining == 1
    assert len(mock.completions) == 1


def test_a_provider_cost_rides_in_the_usage_metadata() -> None:
    with MockLLM(SCRIPT, cost=0.25) as mock:
        _, data = _post(mock, f"{MODEL_PATH}:generateContent", BODY)
    assert json.loads(data)["usageMetadata"]["cost"] == 0.25


def test_an_unknown_model_action_is_not_found(mock: MockLLM) -> None:
    with pytest.raises(urllib.error.HTTPError) as failure:
        _post(mock, f"{MODEL_PATH}:embedContent", BODY)
    assert failure.value.code == 404
    assert mock.remaining == 2
