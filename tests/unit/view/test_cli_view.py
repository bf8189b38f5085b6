"""`ageval view` on the command line: the bundle, the server, coded errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from agevalx.cli import main
from tests.interrupt import sigint_at_default
from tests.unit.view.conftest import Job

pytestmark = pytest.mark.unit


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, captured.out, captured.err


def test_bundle_writes_the_site_and_prints_where(
    capsys: pytest.CaptureFixture[str], job: Job, tmp_path: Path
) -> None:
    target = tmp_path / "out"

    code, out, _ = run(
        capsys,
        "view",
        str(job.root),
        "--cache-dir",
        str(job.cache),
        "--bundle",
        str(target),
        "--json",
    )

    document = json.loads(out)
    assert code == 0 and document["ok"] is True
    assert document["index"] == (target / "index.html").as_posix()
    assert document["attempts"] == 2 and (target / "index.html").is_file()


def test_a_job_directory_can_be_bundled(
    capsys: pytest.CaptureFixture[str], job: Job, tmp_path: Path
) -> None:
    job_dir = job.root / ".ageval/suite-runs/job-1"

    code, out, _ = run(capsys, "view", str(job_dir), "--bundle", str(tmp_path / "b"))

    assert code == 0 and "2 attempts" in out


def test_a_directory_without_results_is_a_coded_error_with_a_hint(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "view", str(tmp_path), "--bundle", str(tmp_path / "b"))

    assert code == 1 and "view_no_results" in err and "hint: run `ageval run" in err
    assert not (tmp_path / "b").exists()


def test_errors_are_one_json_object_with_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(capsys, "view", str(tmp_path / "missing"), "--json")

    document = json.loads(out)
    assert code == 1 and document["error"]["code"] == "view_source_not_found"


def test_port_and_bundle_together_are_a_usage_error(
    capsys: pytest.CaptureFixture[str], job: Job, tmp_path: Path
) -> None:
    code, _, err = run(
        capsys, "view", str(job.root), "--bundle", str(tmp_path / "b"), "--port", "1"
    )

    assert code == 2 and "view_port_with_bundle" in err


def test_the_server_prints_its_url_serves_the_grid_and_stops_on_ctrl_c(job: Job) -> None:
    command = [sys.executable, "-m", "agevalx", "view", str(job.root), "--no-open", "--json"]
    env = {**os.environ, "AGEVAL_CACHE_DIR": str(job.cache)}
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=sigint_at_default,
    )
    try:
        assert process.stdout is not None
        url = json.loads(process.stdout.readline())["url"]
        with urllib.request.urlopen(url, timeout=10) as response:
            page = response.read().decode()
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=20)
    finally:
        process.kill()

    assert url.startswith("http://127.0.0.1:")
    assert 'id="grid"' in page
    assert code == 0
