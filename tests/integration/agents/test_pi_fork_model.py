"""`ageval run --fork <attempt> --checkpoint <seq> --model M` with pi through the gateway:
the forked attempt's model requests reach the upstream (the project's mock model server) for
model M, the source's for its own model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from agevalx.agents import bundles
from agevalx.agents.mockllm import MockLLM
from agevalx.cli import main
from tests.integration.agents.test_pi import (  # noqa: F401  (fixtures)
    bundles_env,
    pi_bundle,
    pi_bundles_dir,
    secret,
)
from tests.integration.agents.test_pi_gateway import _dataset

TWICE = 'def run(ctx):\n    ctx.invoke("solver", "first")\n    ctx.invoke("solver", "second")\n'
SCRIPT = [
    {"tool_call": {"name": "bash", "arguments": {"command": "echo made-by-pi > pi.txt"}}},
    {"message": "first done"},
    {"message": "second done"},
    {"message": "second done, forked"},
]


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main([*args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def _two_invocations(dataset: Path) -> None:
    task = dataset / "tasks/pi-writes-file"
    (task / "run.py").write_text(TWICE)
    config = yaml.safe_load((task / "task.yaml").read_text())
    config["limits"]["agent_invocations"] = 2
    (task / "task.yaml").write_text(yaml.safe_dump(config))


@pytest.mark.integration
@pytest.mark.slow
def test_a_fork_with_another_model_sends_that_model_through_the_gateway(
    copy_dataset: Any,
    capsys: pytest.CaptureFixture[str],
    bundles_env: bundles.Bundle,  # noqa: F811
    secret: str,  # noqa: F811
) -> None:
    with MockLLM(SCRIPT) as model:
        dataset = _dataset(copy_dataset, model.port)
        _two_invocations(dataset)
        code, document = _cli(capsys, "run", str(dataset), "--keep-recovery-state")
        (source,) = document["results"]
        assert code == 0 and source["status"] == "PASS", source
        assert [r.body["model"] for r in model.completions] == ["gpt-5.4-mini"] * 3
        _, listed = _cli(capsys, "checkpoints", str(dataset), "--run", source["attempt_id"])
        first = next(point for point in listed["checkpoints"] if point["step"] == 0)
        code, document = _cli(
            capsys,
            "run",
            str(dataset),
            "--task",
            "pi-writes-file",
            "--fork",
            source["attempt_id"],
            "--checkpoint",
            str(first["seq"]),
            "--model",
            "mock-model-2",
        )
        assert "results" in document, document
        (forked,) = document["results"]
        assert code == 0 and forked["status"] == "PASS", forked
        forked_requests = model.completions[3:]
    assert [r.body["model"] for r in forked_requests] == ["mock-model-2"]
    assert forked_requests[0].authorization == f"Bearer {secret}", "with the real key"
    traffic = dataset / ".ageval/runs" / forked["attempt_id"] / "model.jsonl"
    (exchange,) = [json.loads(line) for line in traffic.read_text().splitlines()]
    assert exchange["request"]["model"] == "mock-model-2"
    stored = json.loads((traffic.parent / "result.json").read_text())
    assert stored["usage"]["solver"]["requests"] == 1
