"""Every example dataset runs from a fresh copy, with its scripted agents and with the oracle."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agevalx.cli import main

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[3] / "examples/datasets"


@pytest.mark.parametrize("name", ["minimal-demo", "text-tools"])
@pytest.mark.parametrize("agent", [[], ["--agent", "oracle"]], ids=["profiles", "oracle"])
def test_every_example_task_passes(copy_dataset, capsys, name, agent) -> None:
    dataset = copy_dataset(EXAMPLES / name)
    code = main(["run", str(dataset), *agent, "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0, document
    assert [r["status"] for r in document["results"]] == ["PASS"] * len(document["results"])
    assert len(document["results"]) == len(list((dataset / "tasks").iterdir()))


def test_the_demo_records_the_scripted_agents_terminal_actions(copy_dataset, capsys) -> None:
    dataset = copy_dataset(EXAMPLES / "minimal-demo")
    assert main(["run", str(dataset), "--task", "terminal-jsonl-agg", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["results"][0]
    activity = dataset / ".ageval/runs" / result["attempt_id"] / "activity.jsonl"
    records = [json.loads(line) for line in activity.read_text().splitlines()]
    commands = [r["command"] for r in records if r["type"] == "terminal"]
    assert any(command.startswith("head -n 3 data/events.jsonl") for command in commands)
    assert [r["type"] for r in records].count("invocation") == 1
    assert records[-1]["type"] == "exec"  # run.py's own ls after the invocation


def test_k5_job_writes_pass_at_k_and_a_rerun_reuses_all_five(copy_dataset, capsys) -> None:
    dataset = copy_dataset(EXAMPLES / "minimal-demo")
    assert main(["run", str(dataset), "-k", "5", "--agent", "oracle", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    summary = json.loads(Path(first["summary_path"]).read_text())
    task = summary["tasks"]["terminal-jsonl-agg"]
    assert (task["n"], task["passed"], task["pass_at_k"], task["pass_hat_k"]) == (5, 5, 1.0, 1.0)
    assert main(["run", str(dataset), "-k", "5", "--agent", "oracle", "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["counts"]["computed"] == 0
    runs = [n for n in second["nodes"] if n["kind"] == "run"]
    assert len(runs) == 5 and {n["outcome"] for n in runs} == {"reused"}


def test_the_harbor_demo_scores_as_its_readme_says(copy_dataset, capsys) -> None:
    dataset = copy_dataset(EXAMPLES / "harbor-demo")
    assert main(["run", str(dataset), "--agent", "oracle", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    statuses = {r["task_id"]: (r["status"], r["score"]) for r in first["results"]}
    assert statuses == {"hello": ("PASS", 1.0), "judge": ("FAIL", 0.0), "partial": ("DONE", 0.5)}
    judge = '{"verifier": {"env": {"JUDGE_MODEL": "good-judge"}}}'
    args = ["run", str(dataset), "--agent", "oracle", "--job-config", judge, "--json"]
    assert main(args) == 0
    second = json.loads(capsys.readouterr().out)
    assert {r["task_id"]: r["status"] for r in second["results"]}["judge"] == "PASS"
    # The job's verifier env reaches every task's verifier: the verifiers run again, no agent.
    computed = {n["kind"] for n in second["nodes"] if n["outcome"] == "computed"}
    assert computed == {"lock", "evaluate", "summary"}
