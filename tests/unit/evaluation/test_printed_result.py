"""The evaluator's result is read from the exec's output when the runner printed it whole."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agevalx.formats.ageval.verifier import RUNNER, printed_result

pytestmark = pytest.mark.unit

MARK = "ageval-result-0123abcd"


def test_the_result_line_is_taken_out_of_the_output() -> None:
    result = {"status": "PASS", "details": {"note": "two\nlines"}}
    output = f"checking...\nall good{chr(10)}{MARK} {json.dumps(result)}\n"
    rest, printed = printed_result(output, MARK)
    assert printed is not None and json.loads(printed) == result
    assert rest == "checking...\nall good"


def test_output_after_the_result_line_is_kept() -> None:
    output = f'\n{MARK} {{"status": "FAIL"}}\nlate line from a child\n'
    rest, printed = printed_result(output, MARK)
    assert printed == '{"status": "FAIL"}' and rest == "late line from a child\n"


@pytest.mark.parametrize(
    "output",
    [
        "no result printed\n",
        f'\n{MARK} {{"status": "PA',  # the kept tail was cut in the line
        f"\n{MARK} [1, 2]\n",  # not an object
        '\nageval-result-other {"status": "PASS"}\n',  # another evaluation's mark
    ],
)
def test_without_a_whole_result_line_the_file_is_read(output: str) -> None:
    assert printed_result(output, MARK) == (output, None)


def test_the_runner_prints_what_it_writes(tmp_path: Path) -> None:
    (tmp_path / "evaluator.py").write_text(
        "def evaluate(ctx):\n    print('hello from the evaluator')\n"
        "    return {'status': 'PASS', 'score': 1.0}\n"
    )
    context = {
        "evaluator": str(tmp_path / "evaluator.py"),
        "workspace": str(tmp_path),
        "home": str(tmp_path),
        "task_dir": str(tmp_path),
        "result_mark": MARK,
    }
    (tmp_path / "context.json").write_text(json.dumps(context))
    done = subprocess.run(
        [sys.executable, str(RUNNER), str(tmp_path / "context.json"), str(tmp_path / "r.json")],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    rest, printed = printed_result(done.stdout, MARK)
    assert printed == (tmp_path / "r.json").read_text()
    assert json.loads(printed)["status"] == "PASS"
    assert rest.strip() == "hello from the evaluator"
