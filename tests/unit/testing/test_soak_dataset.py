"""The generated soak dataset (agevalx/testing/soak.py): valid, seeded, with designed FAILs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from agevalx.formats.ageval.loader import read_dataset, read_task
from agevalx.testing.soak import default_faults, designed_to_fail, write_soak_dataset

pytestmark = pytest.mark.unit

URL = "http://127.0.0.1:9/v1"


def test_every_task_reads_and_its_prompt_names_the_command(tmp_path: Path) -> None:
    soak = write_soak_dataset(tmp_path / "soak", 9, base_url=URL, salt="s")
    files = read_dataset(soak.root)
    for task in soak.tasks:
        source = read_task(files, task.task_id)
        prompt = (soak.root / "tasks" / task.task_id / "prompts" / "task.md").read_text()
        (command,) = re.findall(r"^RUN: (.*)$", prompt, re.MULTILINE)
        assert command == task.command == source.config.parameters.model_dump()["command"]
        writes_expected = f"echo {source.config.parameters.model_dump()['expected']} >" in command
        assert writes_expected == (task.designed == "PASS"), task
    profile = yaml.safe_load((soak.root / "profiles.yaml").read_text())["agent_profiles"]["pi"]
    assert profile["base_url"] == URL and profile["options"]["entry"] == "pi"
    assert profile["model"]["watchdog"] == 3.0


def test_a_seeded_third_of_the_tasks_is_designed_to_fail(tmp_path: Path) -> None:
    assert designed_to_fail(100, seed=26) == designed_to_fail(100, seed=26)
    assert len(designed_to_fail(100, seed=26)) == 33
    assert designed_to_fail(100, seed=26) != designed_to_fail(100, seed=27)
    soak = write_soak_dataset(tmp_path / "soak", 20, base_url=URL)
    assert soak.designed_pass_at(3) == pytest.approx(13 / 20)


def test_the_last_invocations_faults_stall_then_throttle_then_fail() -> None:
    stall, throttle, unavailable = default_faults(300)
    assert stall["kind"] == "stall" and stall["at"] == [1]
    assert throttle["kind"] == "429" and throttle["start"] > stall["at"][0]
    assert throttle["count"] >= 4  # as wide as the job's concurrency: the limit must fall
    assert unavailable["kind"] == "503" and unavailable["start"] > throttle["start"]
    assert throttle["retry_after"] == unavailable["retry_after"] == 1
