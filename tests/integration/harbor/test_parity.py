"""Parity with the real Harbor: the same dataset, the oracle agent, task by task.

The session fixture installs Harbor (pinned, from PyPI) into a Python >= 3.12 venv under
~/.cache/ageval-test/harbor-venv and runs `harbor run -a oracle` on
tests/integration/data/harbor. Then the same dataset runs through `ageval run --agent oracle`
(the one attempt pipeline: image nodes, the oracle, Harbor's verifier through the scoring
session); rewards, score, passed and the collected artifacts must match Harbor's trials.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agevalx.formats.harbor import VerifierStatus
from agevalx.formats.harbor.scoring import AttemptScore, score_invalid, score_rewards
from agevalx.testing.harbor import HarborUnavailable, install_harbor
from agevalx.testing.harbor import run_offline as _run

pytestmark = pytest.mark.integration

DATASET = Path(__file__).parents[1] / "data" / "harbor"
INVALID_REWARD_ERRORS = {
    "RewardFileNotFoundError",
    "RewardFileEmptyError",
    "VerifierOutputParseError",
}

EXPECTED: dict[str, dict[str, float] | str] = {
    "pass": {"reward": 1.0},
    "fail": {"reward": 0.0},
    "fractional": {"reward": 0.5},
    "multi-key": {"accuracy": 0.75, "coverage": 0.5},
    "reward-and-extra": {"reward": 1, "accuracy": 0.8},
    "json-and-txt": {"reward": 1},
    "empty-reward": "RewardFileEmptyError",
    "invalid-json": "VerifierOutputParseError",
    "verifier-timeout": "VerifierTimeoutError",
    "solve-fails": {"reward": 0.25},
    "canary-shebang": {"reward": 1.0},
    "no-shebang": {"reward": 1.0},
    "dockerfile-workdir": {"reward": 1.0},
    "env-vars": {"reward": 1.0},
    "environment-files": {"reward": 1.0},
    "healthcheck": {"reward": 1.0},
    "no-bash": {"reward": 1.0},
}
"""Harbor's trial rewards (or exception) per task; `no-bash` is ours: see below."""

NO_BASH = "no-bash"
"""Harbor runs every command as `bash -c`, so on an image without bash its verifier fails
(no reward); ageval falls back to `sh` (docs/harbor.md, differences)."""


def _install_harbor() -> Path:
    """The `harbor` program (see `agevalx.testing.harbor`); the test skips without it."""
    try:
        return install_harbor()
    except HarborUnavailable as exc:
        pytest.skip(str(exc))


def _files(root: Path) -> dict[str, bytes]:
    """Every file under `root` by relative path (Harbor's manifest.json left out)."""
    found = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    found.pop("manifest.json", None)
    return found


def _harbor_trials(jobs: Path) -> dict[str, dict[str, Any]]:
    trials: dict[str, dict[str, Any]] = {}
    for path in jobs.glob("*/result.json"):
        result = json.loads(path.read_text())
        exception = result.get("exception_info") or {}
        verifier = result.get("verifier_result") or {}
        trials[result["task_name"]] = {
            "rewards": verifier.get("rewards"),
            "exception": exception.get("exception_type"),
            "artifacts": _files(path.parent / "artifacts"),
        }
    return trials


def _unexpected(trials: dict[str, dict[str, Any]]) -> list[str]:
    """Tasks whose trial did not end as designed (e.g. a container removed under Harbor)."""
    wrong = []
    for task, expected in EXPECTED.items():
        trial = trials.get(task)
        if task == NO_BASH:
            continue
        got = trial and (trial["rewards"] if isinstance(expected, dict) else trial["exception"])
        if got != expected:
            wrong.append(task)
    return wrong


def _harbor_run(harbor: Path, work: Path, job: str, tasks: list[str]) -> str:
    argv = [str(harbor), "run", "-p", str(work / "dataset"), "-a", "oracle", "-n", "4"]
    argv += ["-o", str(work / "jobs"), "--job-name", job, "-q", "-y"]
    argv += [option for task in tasks for option in ("-i", task)]
    env = {key: value for key, value in os.environ.items() if not key.startswith("AGEVAL_")}
    finished = _run(argv, 1200, cwd=work, env=env)
    return finished.stdout[-1500:] + finished.stderr[-1500:]


@pytest.fixture(scope="session")
def harbor_results(
    tmp_path_factory: pytest.TempPathFactory, docker_engine: object
) -> dict[str, dict[str, Any]]:
    """Harbor's trial per task. A trial that ended otherwise than designed (an engine
    hiccup, a container removed by a concurrent suite) is run again, twice at most."""
    harbor = _install_harbor()
    work = tmp_path_factory.mktemp("harbor-parity")
    shutil.copytree(DATASET, work / "dataset")
    output = _harbor_run(harbor, work, "parity", [])
    trials = _harbor_trials(work / "jobs" / "parity")
    for attempt in (1, 2):
        again = _unexpected(trials)
        if not again:
            break
        output = _harbor_run(harbor, work, f"parity-rerun-{attempt}", again)
        trials.update(_harbor_trials(work / "jobs" / f"parity-rerun-{attempt}"))
    assert set(trials) == set(EXPECTED), output
    return trials


@dataclass(frozen=True)
class Ours:
    result: dict[str, Any]
    """The task's result.json."""
    artifacts: dict[str, bytes]
    """Its collected artifacts (`.ageval/runs/<attempt>/artifacts/`)."""

    @property
    def verifier(self) -> str:
        return str(self.result["details"].get("verifier"))

    @property
    def rewards(self) -> dict[str, float]:
        return dict(self.result["details"]["extra"]["eval_raw_data"]["rewards"])

    def score(self) -> AttemptScore:
        details = self.result["details"]
        return AttemptScore(
            score=self.result["score"],
            passed=details.get("passed"),
            rewards=self.rewards,
            warning=details.get("warning"),
        )


@pytest.fixture(scope="session")
def our_results(tmp_path_factory: pytest.TempPathFactory, docker_engine: object) -> dict[str, Ours]:
    """Every task through `ageval run --agent oracle`: the one attempt pipeline."""
    work = tmp_path_factory.mktemp("ours")
    dataset = work / "dataset"
    shutil.copytree(DATASET, dataset)
    argv = [sys.executable, "-m", "agevalx", "run", str(dataset), "--agent", "oracle", "--json"]
    argv += ["--cache-dir", str(work / "cache"), "--max-concurrent", "2"]
    finished = subprocess.run(argv, capture_output=True, text=True, timeout=1200)
    document = json.loads(finished.stdout)
    found = {}
    for result in document["results"]:
        artifacts = dataset / ".ageval/runs" / result["attempt_id"] / "artifacts"
        found[result["task_id"]] = Ours(result, _files(artifacts) if artifacts.is_dir() else {})
    assert set(found) == set(EXPECTED), finished.stderr[-2000:]
    return found


@pytest.mark.parametrize("task", sorted(EXPECTED))
def test_task_matches_harbor(
    task: str,
    harbor_results: dict[str, dict[str, Any]],
    our_results: dict[str, Ours],
) -> None:
    harbor, ours = harbor_results[task], our_results[task]
    if task == NO_BASH:
        assert harbor["rewards"] is None and harbor["exception"] is not None
        assert ours.verifier == VerifierStatus.OK and ours.rewards == EXPECTED[task]
        return
    expected = EXPECTED[task]
    if isinstance(expected, dict):
        assert harbor["rewards"] == expected, harbor
        assert ours.verifier == VerifierStatus.OK, ours.result
        assert ours.rewards == harbor["rewards"]
        assert ours.score() == score_rewards(harbor["rewards"])
        return
    assert harbor["rewards"] is None and harbor["exception"] == expected, harbor
    want = VerifierStatus.TIMEOUT if expected == "VerifierTimeoutError" else VerifierStatus.INVALID
    assert ours.verifier == want, ours.result
    assert expected in INVALID_REWARD_ERRORS | {"VerifierTimeoutError"}
    attempt = ours.score()
    assert attempt.score == 0.0 and attempt.passed is False
    assert ours.result["status"] == "FAIL"
    assert attempt == score_invalid(str(ours.result["details"]["warning"]))


@pytest.mark.parametrize("task", sorted(set(EXPECTED) - {NO_BASH}))
def test_artifacts_match_harbor(
    task: str,
    harbor_results: dict[str, dict[str, Any]],
    our_results: dict[str, Ours],
) -> None:
    assert our_results[task].artifacts == harbor_results[task]["artifacts"]


def test_declared_artifacts_are_collected(our_results: dict[str, Ours]) -> None:
    assert set(our_results["pass"].artifacts) == {"logs/artifacts/note.txt", "tmp/answer.txt"}
