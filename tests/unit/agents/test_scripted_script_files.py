"""The scripted agent's script: read with the config budgets, and only from inside the task.

A YAML alias bomb is refused quickly with bounded memory (`agent_script_invalid`), not
expanded into gigabytes of JSON; `options.script` may not be absolute, climb with `..` or
leave the task through a symbolic link, neither at lock time (`invalid_path`) nor when the
agent starts (`agent_script_invalid`).
"""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path

import pytest

from agevalx.agents import scripted
from agevalx.agents.base import AgentError
from agevalx.cli import main
from agevalx.errors import AgevalError
from tests.unit.agents.conftest import AgentRun
from tests.unit.harbor.builders import write_task

pytestmark = pytest.mark.unit


def _alias_bomb(levels: int = 6) -> str:
    """`steps` expands to 9**levels strings through anchors and aliases (9**6: half a million;
    the unbudgeted reader turned it into about 200 MB of JSON)."""
    lines = ["a0: &a0 [" + ", ".join(['"lol"'] * 9) + "]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 9) + "]")
    lines.append(f"steps: *a{levels - 1}")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_with_bounded_memory(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(_alias_bomb())
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="expands to more than"):
            scripted.script_json(bomb, display="bomb.yaml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 32 * 1024 * 1024  # the unbudgeted reader took gigabytes


def test_an_agent_with_an_alias_bomb_script_fails_with_agent_script_invalid(
    agent_run: AgentRun,
) -> None:
    (agent_run.task_dir / "bomb.yaml").write_text(_alias_bomb())
    started = time.monotonic()
    with pytest.raises(AgentError) as caught:
        agent_run(options={"script": "bomb.yaml"})
    assert caught.value.code == "agent_script_invalid"
    assert "bomb.yaml" in caught.value.message and "expands" in caught.value.message
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(
    "text",
    ["steps:\n  - sleep: .inf\n", "- message: [" * 80 + "]" * 80 + "\n", "42\n"],
    ids=["non-finite", "too-deep", "not-steps"],
)
def test_other_scripts_outside_the_budgets_are_agent_script_invalid(
    agent_run: AgentRun, text: str
) -> None:
    (agent_run.task_dir / "script.yaml").write_text(text)
    with pytest.raises(AgentError) as caught:
        agent_run(options={"script": "script.yaml"})
    assert caught.value.code == "agent_script_invalid"


def _outside(agent_run: AgentRun) -> Path:
    outside = agent_run.task_dir.parent / "outside.yaml"
    outside.write_text("steps:\n  - message: read from outside the task\n")
    return outside


@pytest.mark.parametrize("how", ["absolute", "dotdot", "link", "linked-dir"])
def test_a_script_outside_the_task_is_refused_when_the_agent_starts(
    agent_run: AgentRun, how: str
) -> None:
    outside = _outside(agent_run)
    script = {"absolute": str(outside), "dotdot": "../outside.yaml"}.get(how)
    if how == "link":
        (agent_run.task_dir / "script.yaml").symlink_to(outside)
        script = "script.yaml"
    if how == "linked-dir":
        (agent_run.task_dir / "solution").symlink_to(outside.parent)
        script = "solution/outside.yaml"
    with pytest.raises(AgentError) as caught:
        agent_run(options={"script": script})
    assert caught.value.code == "agent_script_invalid"
    assert "inside the task" in caught.value.message or "leads outside" in caught.value.message
    assert agent_run.actions == [] and agent_run.transcript == []


def test_a_link_to_a_script_inside_the_task_is_followed(agent_run: AgentRun) -> None:
    (agent_run.task_dir / "real.yaml").write_text("steps:\n  - message: linked\n")
    (agent_run.task_dir / "script.yaml").symlink_to("real.yaml")
    assert agent_run(options={"script": "script.yaml"}).output == "linked"


SCRIPTED = {"executor": "acp", "options": {"entry": "ageval-scripted-agent"}}


@pytest.mark.parametrize("how", ["absolute", "dotdot", "link"])
def test_a_script_outside_the_task_fails_the_lock(make_dataset, lock_fails, how: str) -> None:
    script = {"absolute": "/etc/passwd", "dotdot": "../../profiles.yaml"}.get(how, "s.yaml")
    profile = {**SCRIPTED, "options": {**SCRIPTED["options"], "script": script}}
    dataset = make_dataset(profiles={"agent_profiles": {"solver": profile}})
    if how == "link":
        (dataset / "tasks/demo-task/s.yaml").symlink_to(dataset / "profiles.yaml")
    error: AgevalError = lock_fails(dataset)
    assert (error.code, error.field) == ("invalid_path", "agent_profiles.solver.options.script")
    assert error.file is not None and error.file.endswith("profiles.yaml")


def test_a_harbor_task_with_a_script_outside_it_fails_the_lock(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = write_task(tmp_path / "dataset", "demo")
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text(
        "format: ageval.profiles/1\nagent_profiles:\n  solver:\n    executor: acp\n"
        "    options:\n      entry: ageval-scripted-agent\n      script: ../../profiles.yaml\n"
    )
    code = main(["lock", str(task), "--profiles", str(profiles), "--json"])
    error = json.loads(capsys.readouterr().out)["error"]
    assert code == 1
    assert (error["code"], error["field"]) == (
        "invalid_path",
        "agent_profiles.solver.options.script",
    )
