"""`ageval lint` on the command line: exit codes, --json, the human report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agevalx.cli import main

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[1] / "lint" / "data"
FINDING_KEYS = {"code", "severity", "task", "file", "line", "message", "hint"}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, captured.out, captured.err


def harbor_dataset(tmp_path: Path, *cases: str) -> Path:
    root = tmp_path / "dataset"
    shutil.copytree(DATA / "harbor" / "good", root)
    for case in cases:
        shutil.copytree(DATA / "harbor" / "bad" / case, root / case)
    return root


def test_a_clean_dataset_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "lint", str(DATA / "ageval" / "good"))

    assert code == 0
    assert "0 errors, 0 warnings in 2 tasks" in out


def test_errors_exit_1_and_json_lists_each_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = harbor_dataset(tmp_path, "literal_secret", "timeout_missing")

    code, out, _ = run(capsys, "lint", str(root), "--json")

    assert code == 1
    document = json.loads(out)
    assert document["ok"] is False
    assert (document["errors"], document["warnings"], document["tasks"]) == (1, 1, 4)
    assert document["format"] == "harbor"
    for finding in document["findings"]:
        assert set(finding) == FINDING_KEYS
    secret = next(f for f in document["findings"] if f["code"] == "literal_secret")
    assert secret["severity"] == "error"
    assert (secret["task"], secret["file"], secret["line"]) == (
        "literal_secret",
        "literal_secret/task.toml",
        16,
    )
    assert "AKIA" not in out  # the secret itself is never printed


def test_warnings_alone_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = harbor_dataset(tmp_path, "timeout_missing")

    code, out, _ = run(capsys, "lint", str(root), "--json")

    assert code == 0
    assert json.loads(out)["ok"] is True


def test_the_human_report_groups_findings_by_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = harbor_dataset(tmp_path, "timeout_invalid", "verifier_needs_network")

    code, out, _ = run(capsys, "lint", str(root))

    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "timeout_invalid"
    assert "error   timeout_invalid  timeout_invalid/task.toml:7" in lines[1]
    assert lines[2].strip().startswith("hint: ")
    assert lines[3] == "verifier_needs_network"
    assert "warning verifier_needs_network  verifier_needs_network/tests/test.sh:2" in lines[4]
    assert lines[-1].startswith("1 error, 1 warning in 4 tasks")


def test_an_unreadable_dataset_is_a_coded_error_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "lint", str(tmp_path / "nowhere"), "--json")

    assert code == 1
    assert json.loads(out)["error"]["code"] == "dataset_not_found"

    code, _, err = run(capsys, "lint", str(tmp_path))
    assert code == 1
    assert "[lint_not_a_dataset]" in err
