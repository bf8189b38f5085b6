"""pi through the model gateway, end to end through the CLI, against the mock model server.

The mock listens on the host's loopback (a `localhost` base_url is the host's own: only the
gateway reaches it). The attempt sits behind `egress: llm`. What the tests prove: the real key
never enters the container (its environment, every process's environment and command line,
its whole filesystem), tokens and cost come out as the mock reported them, and a failing
upstream is waited for, then either recovers (the attempt passes, with its retries and wait
time recorded) or ends as an infrastructure ERROR, never as the agent's FAIL.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from agevalx.agents import bundles
from agevalx.agents.mockllm import PROMPT_TOKENS, MockLLM
from agevalx.cli import main
from agevalx.gateway import server as gateway_server
from agevalx.gateway.usage import load_prices
from tests.integration.agents.test_pi import (  # noqa: F401  (fixtures)
    DATASET,
    bundles_env,
    pi_bundle,
    pi_bundles_dir,
    secret,
)
from tests.integration.conftest import committed_image

PROBE = (
    "echo made-by-pi > /attempt/workspace/pi.txt; "
    "{ env; for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; tr '\\0' ' ' < $p/cmdline;"
    " echo; done; } > /attempt/workspace/probe.txt 2>/dev/null; true"
)
SCRIPT = [
    {"tool_call": {"name": "bash", "arguments": {"command": PROBE}}},
    {"message": "I wrote pi.txt."},
]


def _dataset(copy_dataset: Any, port: int, *, options: dict[str, Any] | None = None) -> Path:
    dataset: Path = copy_dataset(DATASET)
    path = dataset / "profiles.yaml"
    profiles = yaml.safe_load(path.read_text())
    solver = profiles["agent_profiles"]["solver"]
    solver["base_url"] = f"http://localhost:{port}/v1"
    solver["model"] = {"id": "gpt-5.4-mini"}
    solver["options"].update(options or {})
    profiles["environment_options"] = {"egress": "llm"}
    path.write_text(yaml.safe_dump(profiles))
    return dataset


def _run(
    dataset: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, dict[str, Any]]:
    code = main(["run", str(dataset), "--json", *extra])
    document = json.loads(capsys.readouterr().out)
    (result,) = document["results"]
    return code, result


def _stored_result(dataset: Path, result: dict[str, Any]) -> dict[str, Any]:
    path = dataset / ".ageval/runs" / result["attempt_id"] / "result.json"
    return dict(json.loads(path.read_text()))


@pytest.mark.integration
@pytest.mark.slow
def test_the_real_key_never_enters_the_attempt_container(
    copy_dataset: Any,
    capsys: pytest.CaptureFixture[str],
    bundles_env: bundles.Bundle,  # noqa: F811
    secret: str,  # noqa: F811
) -> None:
    with MockLLM(SCRIPT) as model:
        dataset = _dataset(copy_dataset, model.port)
        code, result = _run(dataset, capsys)
        assert code == 0 and result["status"] == "PASS", result
        assert [r.authorization for r in model.completions] == [f"Bearer {secret}"] * 2
    run_key = next(node["key"] for node in result["nodes"] if node["kind"] == "run")
    image = committed_image(run_key)
    probe = subprocess.run(
        ["docker", "run", "--rm", image, "cat", "/attempt/workspace/probe.txt"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "AGEVAL_API_KEY=ageval-gw-" in probe, "the probe saw the agent's environment"
    assert "pi-acp" in probe, "the probe saw the agent's processes"
    assert secret not in probe
    anywhere = subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            image,
            "grep",
            "-rlsF",
            secret,
            "/",
            "--exclude-dir=proc",
            "--exclude-dir=sys",
            "--exclude-dir=dev",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert anywhere.stdout == "", "the key is somewhere in the container's filesystem"
    inspected = subprocess.run(
        ["docker", "image", "inspect", image], capture_output=True, text=True, check=True
    ).stdout
    assert secret not in inspected

    traffic_path = dataset / ".ageval/runs" / result["attempt_id"] / "model.jsonl"
    traffic = [json.loads(line) for line in traffic_path.read_text().splitlines()]
    assert [(t["seq"], t["role"], t["status"], t["streamed"]) for t in traffic] == [
        (1, "solver", 200, True),
        (2, "solver", 200, True),
    ]
    assert traffic[0]["path"] == "/v1/chat/completions"
    assert traffic[0]["request"]["model"] == "gpt-5.4-mini"
    assert traffic[-1]["response"][-1] == "[DONE]"
    assert len({t["request_digest"] for t in traffic}) == 2
    assert secret not in traffic_path.read_text()
    assert "ageval-gw-" not in traffic_path.read_text(), "headers are never recorded"

    usage = _stored_result(dataset, result)["usage"]["solver"]
    price = load_prices().models["gpt-5.4-mini"]
    completion = 8 + 3  # the mock's figures: 8 per tool call, 1 per word of text
    assert usage["requests"] == 2
    assert usage["prompt_tokens"] == 2 * PROMPT_TOKENS
    assert usage["completion_tokens"] == completion
    expected = (2 * PROMPT_TOKENS * price.input + completion * price.output) / 1e6
    assert usage["cost_usd"] == pytest.approx(expected)
    assert usage["retries"] == 0


@pytest.mark.integration
@pytest.mark.slow
def test_pi_waits_for_a_stalled_upstream_and_passes_when_it_recovers(
    copy_dataset: Any,
    capsys: pytest.CaptureFixture[str],
    bundles_env: bundles.Bundle,  # noqa: F811
    secret: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(gateway_server, "RETRY_INTERVAL_SECONDS", 0.2)
    with MockLLM(SCRIPT, failures=2, failure_status=429, retry_after="1", cost=0.5) as model:
        dataset = _dataset(copy_dataset, model.port, options={"upstream_stall_seconds": 30})
        code, result = _run(dataset, capsys)
    assert code == 0 and result["status"] == "PASS", result
    usage = _stored_result(dataset, result)["usage"]["solver"]
    assert usage["retries"] == 2 and usage["wait_seconds"] == 2.0, "Retry-After: 1 honoured"
    assert usage["cost_usd"] == pytest.approx(1.0), "the provider's reported cost wins"


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("stall", [0, 1])
def test_an_upstream_that_never_recovers_is_an_infrastructure_error(
    copy_dataset: Any,
    capsys: pytest.CaptureFixture[str],
    bundles_env: bundles.Bundle,  # noqa: F811
    secret: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    stall: int,
) -> None:
    monkeypatch.setattr(gateway_server, "RETRY_INTERVAL_SECONDS", 0.2)
    with MockLLM(SCRIPT, failures=-1) as model:
        dataset = _dataset(copy_dataset, model.port, options={"upstream_stall_seconds": stall})
        started = time.monotonic()
        # One try: with --retry-infra (default 2) each retry would meet the same dead upstream.
        code, result = _run(dataset, capsys, "--retry-infra", "0")
        took = time.monotonic() - started
        tries = len(model.completions)
    assert code != 0
    assert result["status"] == "ERROR", result
    assert result["error"]["code"] == "model_upstream_unavailable"
    assert result["error"]["stage"] == "run"
    if stall == 0:
        assert tries == 1
    else:
        assert 4 <= tries <= 6, tries
    assert took < 120
    usage = _stored_result(dataset, result)["usage"]  # counted until the run stage failed
    assert usage == result["usage"] and set(usage) == {"solver"}, usage
    assert usage["solver"]["requests"] == 0 and usage["solver"]["retries"] == tries - 1
    assert usage["solver"]["wait_seconds"] == pytest.approx(0.2 * (tries - 1))


@pytest.mark.integration
@pytest.mark.slow
def test_the_real_retry_interval_is_sixty_seconds(
    copy_dataset: Any,
    capsys: pytest.CaptureFixture[str],
    bundles_env: bundles.Bundle,  # noqa: F811
    secret: str,  # noqa: F811
) -> None:
    assert gateway_server.RETRY_INTERVAL_SECONDS == 60.0
    with MockLLM(SCRIPT, failures=1) as model:
        dataset = _dataset(copy_dataset, model.port, options={"upstream_stall_seconds": 120})
        code, result = _run(dataset, capsys)
        first, second = model.completions[0], model.completions[1]
    assert code == 0 and result["status"] == "PASS", result
    assert 60.0 <= second.time - first.time < 70.0
    usage = _stored_result(dataset, result)["usage"]["solver"]
    assert (usage["retries"], usage["wait_seconds"]) == (1, 60.0)
