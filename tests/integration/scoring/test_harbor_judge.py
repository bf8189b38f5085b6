"""A Harbor verifier's LLM judge (`EVAL_BASE_URL` / `EVAL_API_KEY` in `[verifier.env]`)
through the model gateway, with real containers and the mock model server on the host's
loopback.

tests/integration/data/harbor-judge/graded's test.sh prints its env, counts the files and
processes holding the key's prefix, and asks the judge; the tests prove the verifier gets
the gateway and a per-evaluation token (only the mock sees the real key), that the judge's
usage is counted as `evaluator_usage`, that its traffic is in judge-model.jsonl with the
host's secrets masked, and that re-scoring from cache keeps that file.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from agevalx.agents.mockllm import PROMPT_TOKENS, MockLLM
from agevalx.cli import main
from agevalx.gateway.recording import JUDGE_TRAFFIC
from agevalx.gateway.usage import load_prices

pytestmark = pytest.mark.integration

DATASET = Path(__file__).parents[1] / "data" / "harbor-judge"


def _run(capsys: pytest.CaptureFixture[str], dataset: Path) -> tuple[int, dict[str, Any]]:
    code = main(["run", str(dataset), "--agent", "oracle", "--json"])
    return code, json.loads(capsys.readouterr().out)


def _secrets(monkeypatch: pytest.MonkeyPatch, port: int) -> tuple[str, str]:
    key, note = f"sk-judge-{uuid.uuid4().hex}", f"note-{uuid.uuid4().hex}"
    monkeypatch.setenv("AGEVAL_TEST_JUDGE_URL", f"http://localhost:{port}/v1")
    monkeypatch.setenv("AGEVAL_TEST_JUDGE_KEY", key)
    monkeypatch.setenv("AGEVAL_TEST_JUDGE_NOTE", note)
    return key, note


def test_a_harbor_verifier_judge_goes_through_the_gateway_and_is_recorded(
    copy_dataset: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = copy_dataset(DATASET)
    verdict = "PASS, the answer is right"
    with MockLLM([{"message": verdict}], model="gpt-5.4-mini") as model:
        key, note = _secrets(monkeypatch, model.port)
        code, document = _run(capsys, dataset)
        completions = list(model.completions)
    assert code == 0, document
    (result,) = document["results"]
    assert result["status"] == "PASS", result
    assert [request.authorization for request in completions] == [f"Bearer {key}"]
    assert note in json.dumps(completions[0].body), "the upstream gets the real prompt"
    directory = dataset / ".ageval/runs" / result["attempt_id"]
    stored = json.loads((directory / "result.json").read_text())
    output = stored["evaluator_output"]
    assert "EVAL_API_KEY=ageval-gw-" in output
    assert "EVAL_BASE_URL=http://host.docker.internal:" in output
    assert "FILES_WITH_KEY=0" in output and "PROCESSES_WITH_KEY=0" in output
    assert key not in output and "localhost" not in output
    assert stored["usage"] == {}, "the oracle agent used no model"
    judge = stored["evaluator_usage"]["eval"]
    words = len(verdict.split(" "))  # the mock: one token per word
    assert (judge["requests"], judge["prompt_tokens"], judge["completion_tokens"]) == (
        1,
        PROMPT_TOKENS,
        words,
    )
    price = load_prices().models["gpt-5.4-mini"]
    assert judge["cost_usd"] == pytest.approx(
        (PROMPT_TOKENS * price.input + words * price.output) / 1e6
    )

    traffic = (directory / JUDGE_TRAFFIC).read_text()
    (line,) = [json.loads(text) for text in traffic.splitlines()]
    assert (line["role"], line["status"], line["path"]) == ("eval", 200, "/v1/chat/completions")
    assert line["request"]["messages"][0]["content"] == "Grade '42' (***)"
    assert line["response"]["choices"][0]["message"]["content"].startswith("PASS")
    assert key not in traffic and note not in traffic

    (directory / JUDGE_TRAFFIC).unlink()
    code, document = _run(capsys, dataset)  # no model server any more: all from cache
    outcomes = {node["id"]: node["outcome"] for node in document["nodes"]}
    assert code == 0 and outcomes["evaluate:graded#0"] == "reused", outcomes
    assert (directory / JUDGE_TRAFFIC).read_text() == traffic


def test_a_harbor_judge_upstream_that_never_recovers_is_an_evaluation_error(
    copy_dataset: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = copy_dataset(DATASET)
    toml = dataset / "graded/task.toml"
    toml.write_text(
        toml.read_text().replace("[verifier]\ntimeout_sec = 60.0", "[verifier]\ntimeout_sec = 8.0")
    )
    with MockLLM([], failures=-1) as model:
        _secrets(monkeypatch, model.port)
        code, document = _run(capsys, dataset)
        tries = len(model.completions)
    (result,) = document["results"]
    assert code == 1 and result["status"] == "ERROR", result
    assert tries >= 1
    error = result["error"]
    assert error["code"] == "evaluator_error", error
    assert error["message"].startswith("model_upstream_unavailable"), error
    assert result["evaluator_usage"]["eval"]["requests"] == 0


def test_a_harbor_judge_is_reached_from_a_scoring_host_behind_egress_llm(
    copy_dataset: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = copy_dataset(DATASET)
    (dataset / "profiles.yaml").write_text(
        "format: ageval.profiles/1\n"
        "agent_profiles:\n  solver:\n    executor: oracle\n"
        "evaluate_host:\n  environment_options:\n    egress: llm\n"
    )
    with MockLLM([{"message": "PASS"}], model="gpt-5.4-mini") as model:
        _secrets(monkeypatch, model.port)
        code = main(["run", str(dataset), "--json"])
        document = json.loads(capsys.readouterr().out)
    assert code == 0, document
    (result,) = document["results"]
    assert result["status"] == "PASS", result
    assert result["evaluator_usage"]["eval"]["requests"] == 1
    stored = json.loads(
        (dataset / ".ageval/runs" / result["attempt_id"] / "result.json").read_text()
    )
    output = stored["evaluator_output"]
    assert "HTTPS_PROXY=" in output or "https_proxy=" in output, "behind the fence's proxy"
