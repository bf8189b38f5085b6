"""An evaluator's LLM judge (`evaluation.judge`) through the model gateway, with real
containers and the mock model server on the host's loopback.

The evaluator.py of tests/integration/data/judge calls the model with the variables ageval
gives it; the tests prove it gets a per-evaluation gateway token (never the real key, which
only the mock sees), that its usage is counted apart from the agents' in result.json,
summary.json and the report, that its traffic is in judge-model.jsonl, and that a scoring
host behind `egress: llm` reaches the judge.
"""

from __future__ import annotations

import csv
import io
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from agevalx.agents.mockllm import PROMPT_TOKENS, MockLLM
from agevalx.cli import main
from agevalx.gateway.recording import JUDGE_TRAFFIC
from agevalx.gateway.usage import load_prices

DATASET = Path(__file__).parents[1] / "data" / "judge"
KEY_VARIABLE = "AGEVAL_TEST_JUDGE_KEY"


def _dataset(copy_dataset: Any, port: int, host: dict[str, Any] | None = None) -> Path:
    dataset: Path = copy_dataset(DATASET)
    path = dataset / "profiles.yaml"
    profiles = yaml.safe_load(path.read_text())
    profiles["agent_profiles"]["judge"]["base_url"] = f"http://localhost:{port}/v1"
    if host is not None:
        profiles["evaluate_host"] = host
    path.write_text(yaml.safe_dump(profiles))
    return dataset


@pytest.mark.integration
@pytest.mark.parametrize("fenced", [False, True], ids=["open", "egress-llm"])
def test_the_judge_goes_through_the_gateway_and_is_counted_apart(
    copy_dataset: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    fenced: bool,
) -> None:
    secret = f"sk-judge-{uuid.uuid4().hex}"
    monkeypatch.setenv(KEY_VARIABLE, secret)
    host = {"environment_options": {"egress": "llm"}} if fenced else None
    with MockLLM([{"message": "PASS, a fine answer"}, {"message": "PASS again"}]) as model:
        dataset = _dataset(copy_dataset, model.port, host)
        code = main(["run", str(dataset), "-k", "2", "--json"])
        document = json.loads(capsys.readouterr().out)
        authorizations = [request.authorization for request in model.completions]
    assert code == 0, document
    assert authorizations == [f"Bearer {secret}"] * 2, "the gateway puts the real key in"
    results = document["results"]
    assert [result["status"] for result in results] == ["PASS", "PASS"], results
    price = load_prices().models["gpt-5.4-mini"]
    for result in results:
        stored = json.loads(
            (dataset / ".ageval/runs" / result["attempt_id"] / "result.json").read_text()
        )
        environment = stored["details"]["environment"]
        assert "AGEVAL_JUDGE_API_KEY=ageval-gw-" in environment
        assert "AGEVAL_JUDGE_BASE_URL=http://host.docker.internal:" in environment
        assert secret not in environment and "***" not in environment
        assert stored["usage"] == {}, "the oracle agent used no model"
        judge = stored["evaluator_usage"]["judge"]
        words = len(stored["details"]["verdict"].split())  # the mock: 1 token per word
        assert (judge["requests"], judge["prompt_tokens"]) == (1, PROMPT_TOKENS)
        assert judge["completion_tokens"] == words
        expected = (PROMPT_TOKENS * price.input + words * price.output) / 1e6
        assert judge["cost_usd"] == pytest.approx(expected)
        traffic = (dataset / ".ageval/runs" / result["attempt_id"] / JUDGE_TRAFFIC).read_text()
        (line,) = [json.loads(text) for text in traffic.splitlines()]
        assert (line["role"], line["status"]) == ("judge", 200)
        assert line["response"]["choices"][0]["message"]["content"] == stored["details"]["verdict"]
        assert secret not in traffic
    (summary_path,) = (dataset / ".ageval/suite-runs").glob("*/summary.json")
    summary = json.loads(summary_path.read_text())
    assert summary["usage"] is None, "no agent used a model"
    assert summary["evaluator_usage"]["requests"] == 2
    assert summary["evaluator_usage"]["prompt_tokens"] == 2 * PROMPT_TOKENS
    assert main(["report", str(dataset), "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    overall = next(row for row in rows if row["scope"] == "overall")
    assert (overall["evaluator_requests"], overall["requests"]) == ("2", "")
    assert overall["evaluator_prompt_tokens"] == str(2 * PROMPT_TOKENS)


@pytest.mark.integration
def test_a_judge_upstream_that_never_recovers_is_an_evaluation_error(
    copy_dataset: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_VARIABLE, f"sk-judge-{uuid.uuid4().hex}")
    with MockLLM([], failures=-1) as model:
        dataset = _dataset(copy_dataset, model.port)
        path = dataset / "profiles.yaml"
        profiles = yaml.safe_load(path.read_text())
        profiles["agent_profiles"]["judge"]["options"] = {"upstream_stall_seconds": 0}
        path.write_text(yaml.safe_dump(profiles))
        code = main(["run", str(dataset), "--json"])
        (result,) = json.loads(capsys.readouterr().out)["results"]
        tries = len(model.completions)
    assert code == 1 and result["status"] == "ERROR", result
    assert tries == 1, "upstream_stall_seconds: 0 fails at once"
    error = result["error"]
    assert (error["code"], error["stage"]) == ("evaluator_error", "evaluate")
    assert error["message"].startswith("model_upstream_unavailable"), error
    assert result["evaluator_usage"]["judge"]["requests"] == 0
