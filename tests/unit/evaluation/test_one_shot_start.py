"""What a scoring container's evaluator Python runs before the runner (`verifier.MAIN`), as
its main process or by exec: the variables a commit blanked are gone, the workspace and the
home exist, the runner works in the workspace, and it runs as a script with its own
arguments; here on this machine's Python, with the real runner script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agevalx.evaluation.runtime import RUNNER
from agevalx.formats.ageval.verifier import HostPython, _Evaluation, printed_result

pytestmark = pytest.mark.unit

EVALUATOR = """\
import os, sys

def evaluate(ctx):
    return {"status": "PASS", "details": {
        "blanked": sorted(n for n in ("MAIN_SECRET", "OTHER") if n in os.environ),
        "kept": os.environ.get("KEPT"),
        "home": ctx.home.is_dir(),
        "argv": sys.argv[1:],
        "cwd": os.getcwd(),
    }}
"""


def test_the_runner_starts_without_the_blanked_variables_in_its_workspace_with_its_home(
    tmp_path: Path,
) -> None:
    evaluation = _Evaluation(private=str(tmp_path / "private"), mark="ageval-result-test")
    private = Path(evaluation.private)
    private.mkdir()
    (private / "evaluate.py").write_bytes(RUNNER.read_bytes())
    (private / "evaluator.py").write_text(EVALUATOR)
    home = tmp_path / "attempt" / "home"
    workspace = tmp_path / "attempt" / "workspace"
    context = {
        "evaluator": str(private / "evaluator.py"),
        "workspace": str(workspace),
        "home": str(home),
        "task_dir": str(private),
        "result_mark": evaluation.mark,
    }
    (private / "context.json").write_text(json.dumps(context))
    unset = ("MAIN_SECRET", "OTHER")
    argv = evaluation.main_command(
        HostPython(version="3"), unset, workspace=str(workspace), home=str(home)
    )
    argv[0] = sys.executable  # this machine's python3 (an isolated host's runs its own)
    environment = {**os.environ, "MAIN_SECRET": "", "OTHER": "", "KEPT": "yes"}
    ran = subprocess.run(
        argv, capture_output=True, text=True, env=environment, check=False, cwd=tmp_path
    )
    assert ran.returncode == 0, ran.stderr
    _, printed = printed_result(ran.stdout, evaluation.mark)
    assert printed is not None, ran.stdout
    result = json.loads(printed)
    assert result["status"] == "PASS", result
    details = result["details"]
    assert details["blanked"] == [] and details["kept"] == "yes", details
    assert details["home"] is True and home.is_dir()
    assert details["cwd"] == str(workspace), details
    # the runner sees its own arguments, as when run as a script
    assert details["argv"] == [str(private / "context.json"), str(private / "result.json")]
    assert json.loads((private / "result.json").read_text())["status"] == "PASS"
