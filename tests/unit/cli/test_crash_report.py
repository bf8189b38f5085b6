"""An unexpected exception is one coded line for the user and a traceback kept in a file."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

import agevalx.operations.lock
from agevalx.cli import main

pytestmark = pytest.mark.unit


def _broken_lock(*args: object, **kwargs: object) -> None:
    raise ZeroDivisionError("a bug deep in the lock")


def test_an_internal_error_names_a_private_file_holding_its_traceback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AGEVAL_DEBUG", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(agevalx.operations.lock, "lock", _broken_lock)
    code = main(["lock", str(tmp_path), "--cache-dir", str(tmp_path / "cache"), "--json"])
    error = json.loads(capsys.readouterr().out)["error"]
    assert code == 1 and error["code"] == "internal_error"
    assert error["message"] == "ZeroDivisionError: a bug deep in the lock"
    reports = list((tmp_path / "state/ageval/crashes").iterdir())
    assert len(reports) == 1 and str(reports[0]) in error["hint"]
    text = reports[0].read_text()
    assert "Traceback (most recent call last)" in text and "_broken_lock" in text
    assert text.startswith(f"ageval lock {tmp_path}")
    assert stat.S_IMODE(reports[0].stat().st_mode) == 0o600


def test_without_a_writable_state_directory_the_report_goes_to_the_temp_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("")
    monkeypatch.delenv("AGEVAL_DEBUG", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(blocked))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr("tempfile.tempdir", None)
    monkeypatch.setattr(agevalx.operations.lock, "lock", _broken_lock)
    code = main(["lock", str(tmp_path), "--cache-dir", str(tmp_path / "cache")])
    assert code == 1
    err = capsys.readouterr().err
    reports = list((tmp_path / "tmp/ageval-crashes").iterdir())
    assert len(reports) == 1 and reports[0].name in err.replace("\n", "")
