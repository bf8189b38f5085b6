"""A directory with a task.toml is Harbor's: when it is not a task, the Harbor loader says why.

A task.toml that does not parse (or does not validate) is reported as `harbor_task_invalid`
naming task.toml and the problem, never as a missing ageval.yaml; a child that is not a task
is skipped as Harbor skips it, and reported as a warning.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agevalx.cli import main
from agevalx.formats import open_dataset
from agevalx.lockfile import BindingRequest
from tests.unit.harbor.builders import TaskFactory

pytestmark = pytest.mark.unit

BROKEN = "[agent\ntimeout_sec = 1\n"


def _lock_error(capsys: pytest.CaptureFixture[str], path: Path) -> dict:
    code = main(["lock", str(path), "--agent", "oracle", "--json"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    assert code == 1, captured.out
    error: dict = json.loads(captured.out)["error"]
    return error


def test_a_task_dir_whose_task_toml_does_not_parse_reports_the_parse_error(
    make_task: TaskFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    task = make_task(toml=BROKEN)
    error = _lock_error(capsys, task)
    assert error["code"] == "harbor_task_invalid"
    assert error["file"] == f"{task}/task.toml"
    assert "cannot read task.toml" in error["message"] and "line 1" in error["message"]


def test_a_dataset_whose_only_task_toml_is_broken_reports_that_task_toml(
    make_task: TaskFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    task = make_task("only", toml=BROKEN)
    error = _lock_error(capsys, task.parent)
    assert (error["code"], error["file"]) == ("harbor_task_invalid", f"{task}/task.toml")


def test_a_task_toml_that_is_not_valid_for_harbor_names_the_field(
    make_task: TaskFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    task = make_task(toml='[environment]\ndocker_image = "x"\nbuild_timeout_sec = "long"\n')
    error = _lock_error(capsys, task.parent)
    assert (error["code"], error["field"]) == (
        "harbor_task_invalid",
        "environment.build_timeout_sec",
    )


def test_a_task_dir_lacking_a_part_says_which(
    make_task: TaskFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    task = make_task(files={"instruction.md": None})
    error = _lock_error(capsys, task)
    assert error["code"] == "harbor_not_a_task"
    assert "no instruction.md" in error["message"]


def test_a_broken_child_beside_a_task_is_skipped_and_reported(make_task: TaskFactory) -> None:
    good = make_task("good")
    broken = make_task("broken", toml=BROKEN)
    make_task("no-tests", files={"tests/test.sh": None})
    (good.parent / "docs").mkdir()
    dataset = open_dataset(good.parent, BindingRequest(agent="oracle"))
    assert dataset.task_ids == ("good",)
    skipped = {warning.file: warning for warning in dataset.warnings()}
    assert set(skipped) == {f"{broken}/task.toml", str(good.parent / "no-tests/task.toml")}
    assert {warning.code for warning in skipped.values()} == {"harbor_task_skipped"}
    assert "cannot read task.toml" in skipped[f"{broken}/task.toml"].message


def test_a_directory_without_any_task_toml_is_still_asked_for_ageval_yaml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty" / "child").mkdir(parents=True)
    error = _lock_error(capsys, tmp_path / "empty")
    assert error["code"] == "missing_file" and error["file"].endswith("ageval.yaml")
