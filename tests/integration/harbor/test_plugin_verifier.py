"""Harbor verifier classes (`verifier.import_path`) run by ageval against its container.

Harbor needs Python >= 3.12, so these tests run in the Harbor venv of the parity tests
(installed by its `_install_harbor`), into which agevalx (editable, this checkout) and the
verifier project under tests/integration/data/harbor-plugin/verifier-project are installed.
The library route goes through data/harbor-plugin/verify_in_venv.py (load, oracle, verify);
the CLI route is `python -m agevalx run ... --job-config`.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agevalx.testing.harbor import VENV, installer
from tests.integration.harbor.test_parity import _install_harbor, _run

pytestmark = pytest.mark.integration

ROOT = Path(__file__).parents[3]
DATA = Path(__file__).parents[1] / "data" / "harbor-plugin"
PROJECT = DATA / "verifier-project"
TASK = DATA / "dataset" / "answer"


def _install_stamp() -> str:
    parts = [
        str(ROOT),
        (ROOT / "pyproject.toml").read_text(),
        (PROJECT / "pyproject.toml").read_text(),
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


@pytest.fixture(scope="session")
def plugin_python(docker_engine: object) -> Path:
    """The Harbor venv's python, with agevalx and the verifier project installed."""
    _install_harbor()
    python = VENV / "bin" / "python"
    marker = VENV / f".ageval-plugin-{_install_stamp()}"
    if not marker.exists():
        argv = [*installer(), "-e", str(ROOT), "-e", str(PROJECT)]
        installed = _run(argv, 900)
        assert installed.returncode == 0, installed.stderr[-2000:]
        for stale in VENV.glob(".ageval-plugin-*"):
            stale.unlink()
        marker.touch()
    return python


def _library(python: Path, job: dict[str, Any], trial_root: Path) -> dict[str, Any]:
    argv = [str(python), str(DATA / "verify_in_venv.py"), str(TASK), json.dumps(job)]
    finished = _run([*argv, str(trial_root)], 600)
    assert finished.returncode == 0, finished.stderr[-3000:]
    return dict(json.loads(finished.stdout))


def _verifier_job(name: str, **verifier: Any) -> dict[str, Any]:
    return {"verifier": {"import_path": f"ageval_test_verifier:{name}", **verifier}}


def _trial_dir(trial_root: Path) -> Path:
    (trial,) = (trial_root / "answer").iterdir()
    return trial


def test_verifier_class_runs_its_commands_and_transfers_in_the_sandbox(
    plugin_python: Path, tmp_path: Path
) -> None:
    job = _verifier_job("AnswerVerifier", kwargs={"expected": "42", "key": "answer_matches"})
    outcome = _library(plugin_python, job, tmp_path)["outcome"]
    assert outcome["status"] == "ok", outcome
    assert outcome["rewards"] == {"reward": 1.0, "answer_matches": 1.0}
    assert outcome["test_output"] == "PLUGIN_CHECK=from-task\n"
    trial = _trial_dir(tmp_path)
    assert (trial / "verifier" / "reward.txt").read_text() == "1\n"
    assert (trial / "verifier" / "note.txt").read_text() == "uploaded by the verifier\n"
    assert (trial / "answer.txt").read_text() == "42\n"
    probe = json.loads((trial / "probe.json").read_text())
    assert probe == {"user": "root", "cwd": "/srv", "check": "from-task", "exit": 0}


def test_kwargs_reach_the_verifier_class(plugin_python: Path, tmp_path: Path) -> None:
    job = _verifier_job("AnswerVerifier", kwargs={"expected": "41", "key": "strict"})
    outcome = _library(plugin_python, job, tmp_path)["outcome"]
    assert outcome["rewards"] == {"reward": 1.0, "strict": 0.0}


def test_harbors_own_verifier_class_scores_as_the_default_verifier(
    plugin_python: Path, tmp_path: Path
) -> None:
    outcome = _library(plugin_python, _verifier_job("HarborDefault"), tmp_path)["outcome"]
    assert (outcome["status"], outcome["rewards"]) == ("ok", {"reward": 1.0})
    assert (_trial_dir(tmp_path) / "verifier" / "test-stdout.txt").is_file()


def test_a_raising_verifier_is_an_error_with_its_traceback_kept(
    plugin_python: Path, tmp_path: Path
) -> None:
    outcome = _library(plugin_python, _verifier_job("Broken"), tmp_path)["outcome"]
    assert (outcome["status"], outcome["code"]) == ("error", "verifier_failed")
    assert "RuntimeError: the judge is unreachable" in outcome["message"]
    assert "the judge is unreachable" in outcome["test_output"]
    assert "Traceback" in (_trial_dir(tmp_path) / "exception.txt").read_text()


@pytest.mark.parametrize(
    ("name", "verifier", "status", "code"),
    [
        ("NotFinite", {}, "invalid", "verifier_result_invalid"),
        ("Overflowing", {}, "invalid", "verifier_result_invalid"),
        ("Slow", {"override_timeout_sec": 3}, "timeout", "verifier_timeout"),
    ],
)
def test_invalid_rewards_and_timeouts_score_as_for_tests_sh(
    plugin_python: Path,
    tmp_path: Path,
    name: str,
    verifier: dict[str, Any],
    status: str,
    code: str,
) -> None:
    outcome = _library(plugin_python, _verifier_job(name, **verifier), tmp_path)["outcome"]
    assert (outcome["status"], outcome["code"], outcome["rewards"]) == (status, code, None)


@pytest.mark.parametrize(
    ("import_path", "code"),
    [
        ("ageval_test_verifier:NotAVerifier", "harbor_verifier_not_a_verifier"),
        ("ageval_test_verifier:Missing", "harbor_verifier_import_failed"),
        ("not_installed_verifier:Verifier", "harbor_verifier_import_failed"),
    ],
)
def test_a_class_that_cannot_verify_fails_the_load(
    plugin_python: Path, tmp_path: Path, import_path: str, code: str
) -> None:
    job = {"verifier": {"import_path": import_path}}
    error = _library(plugin_python, job, tmp_path)["error"]
    assert (error["code"], error["field"]) == (code, "verifier.import_path")
    assert error["hint"]
    assert not (tmp_path / "answer").exists()


def _cli(python: Path, work: Path, job: str) -> subprocess.CompletedProcess[str]:
    argv = [str(python), "-m", "agevalx", "run", "dataset", "--task", "answer"]
    argv += ["--agent", "oracle", "--job-config", job, "--cache-dir", str(work / "cache")]
    return _run([*argv, "--json"], 600, cwd=work)


@pytest.fixture
def cli_work(tmp_path: Path) -> Path:
    shutil.copytree(DATA / "dataset", tmp_path / "dataset")
    shutil.copy(DATA / "job.yaml", tmp_path / "job.yaml")
    return tmp_path


def test_ageval_run_with_a_job_config_scores_through_the_class(
    plugin_python: Path, cli_work: Path
) -> None:
    finished = _cli(plugin_python, cli_work, "job.yaml")
    assert finished.returncode == 0, finished.stdout[-2000:] + finished.stderr[-2000:]
    (result,) = json.loads(finished.stdout)["results"]
    assert result["score"] == 1.0
    assert result["details"]["verifier"] == "ok"
    rewards = result["details"]["extra"]["eval_raw_data"]["rewards"]
    assert rewards == {"reward": 1.0, "answer_matches": 1.0}


def test_ageval_run_refuses_a_class_that_is_not_a_verifier(
    plugin_python: Path, cli_work: Path
) -> None:
    job = json.dumps(_verifier_job("NotAVerifier"))
    finished = _cli(plugin_python, cli_work, job)
    assert finished.returncode == 1
    error = json.loads(finished.stdout)["error"]
    assert (error["code"], error["field"]) == (
        "harbor_verifier_not_a_verifier",
        "verifier.import_path",
    )
    assert not (cli_work / "dataset" / ".ageval" / "runs").exists()


def test_ageval_run_keeps_a_raising_verifiers_full_traceback_as_execution_diagnostics(
    plugin_python: Path, cli_work: Path
) -> None:
    finished = _cli(plugin_python, cli_work, json.dumps(_verifier_job("Broken")))
    assert finished.returncode == 1, finished.stdout[-2000:] + finished.stderr[-2000:]
    (result,) = json.loads(finished.stdout)["results"]
    assert result["error"]["code"] == "evaluator_error"
    (diagnostics,) = [a for a in result["artifacts"] if a["id"] == "execution_diagnostics"]
    assert (diagnostics["path"], diagnostics["producer"]) == (
        "execution_diagnostics.txt",
        "evaluate",
    )
    runs = cli_work / "dataset" / ".ageval" / "runs" / result["attempt_id"]
    trace = (runs / "artifacts" / "execution_diagnostics.txt").read_text()
    assert trace.startswith("Traceback (most recent call last):")
    assert 'raise RuntimeError("the judge is unreachable")' in trace
    assert trace.rstrip().endswith("RuntimeError: the judge is unreachable")
