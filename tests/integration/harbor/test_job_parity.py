"""A Harbor job config run by the real `harbor run -c` and by `ageval run --job-config`: the
same tasks (a dataset filtered by name, plus a task listed on its own) and the same rewards
under the job's verifier env (a `${NAME:-default}` template)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from agevalx.cli import main
from tests.integration.harbor.test_parity import _install_harbor, _run

pytestmark = pytest.mark.integration

JOBS_DATA = Path(__file__).resolve().parents[1] / "data/harbor-jobs"


def job_config(root: Path, jobs: Path) -> str:
    return (
        "job_name: layering\n"
        f"jobs_dir: {jobs}\n"
        "agents:\n  - name: oracle\n    override_timeout_sec: 90\n"
        f"datasets:\n  - path: {root / 'tasks'}\n    exclude_task_names: [always-*]\n"
        f"tasks:\n  - path: {root / 'elsewhere' / 'extra-task'}\n"
        "verifier:\n  env:\n    JUDGE_MODEL: ${AGEVAL_PARITY_JUDGE:-good-judge}\n"
    )


def harbor_rewards(jobs: Path) -> dict[str, Any]:
    found = {}
    for path in (jobs / "layering").glob("*/result.json"):
        result = json.loads(path.read_text())
        found[result["task_name"]] = (result.get("verifier_result") or {}).get("rewards")
    return found


def test_a_job_config_gives_harbors_tasks_and_rewards(
    tmp_path: Path,
    docker_engine: object,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    harbor = _install_harbor()
    root = tmp_path / "data"
    shutil.copytree(JOBS_DATA, root)
    job = tmp_path / "job.yaml"
    job.write_text(job_config(root, tmp_path / "jobs"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGEVAL_")}
    finished = _run([str(harbor), "run", "-c", str(job), "-q", "-y"], 900, cwd=tmp_path, env=env)
    theirs = harbor_rewards(tmp_path / "jobs")
    assert set(theirs) == {"judge", "extra-task"}, finished.stdout[-1500:] + finished.stderr[-1500:]

    monkeypatch.delenv("AGEVAL_PARITY_JUDGE", raising=False)
    monkeypatch.chdir(tmp_path)
    code = main(["run", "--job-config", str(job), "--agent", "oracle", "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0, document
    ours = {
        r["task_id"]: r["details"]["extra"]["eval_raw_data"]["rewards"] for r in document["results"]
    }
    assert ours == theirs == {"judge": {"reward": 1.0}, "extra-task": {"reward": 1.0}}
    assert "agents[0].name" in {w["field"] for w in document["warnings"]}
