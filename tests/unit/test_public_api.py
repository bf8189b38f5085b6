"""The public API: the verbs and the models users hold, importable from `agevalx`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import agevalx
from agevalx.reports import build_report, render_report
from tests.unit.reports.builders import mixed_results, write_job

pytestmark = pytest.mark.unit


def test_every_public_name_resolves() -> None:
    for name in agevalx.__all__:
        assert getattr(agevalx, name) is not None, name
    assert {"lock", "run", "replay", "report"} <= set(agevalx.__all__)
    assert {"RunContext", "AttemptResult", "JobSummary", "TaskLock"} <= set(agevalx.__all__)


def test_importing_agevalx_loads_no_heavy_module() -> None:
    probe = "import sys, agevalx; print(sorted(m for m in sys.modules if m.startswith('agevalx')))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout
    assert loaded.strip() == "['agevalx', 'agevalx.errors', 'agevalx.lazy']"


def test_report_renders_what_the_command_prints(tmp_path: Path) -> None:
    dataset = tmp_path / "dataset"
    write_job(dataset, mixed_results(), k=2)
    assert agevalx.report(dataset, "markdown") == render_report(build_report(dataset), "markdown")
