"""The one archive that puts an evaluation's files into its scoring container."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from agevalx.formats.ageval.verifier import evaluation_archive

pytestmark = pytest.mark.unit


def test_the_archive_makes_the_private_directory_and_fills_it(tmp_path: Path) -> None:
    task = tmp_path / "task"
    (task / "tests").mkdir(parents=True)
    (task / "evaluator.py").write_text("def evaluate(ctx): ...\n")
    (task / "tests" / "data.txt").write_text("42\n")
    os.symlink("../../etc/passwd", task / "tests" / "link")
    files = {"evaluate.py": (b"runner", 0o644), "context.json": (b"{}", 0o600)}

    data = evaluation_archive("/.ageval-eval-abc", task, files)

    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        members = {member.name: member for member in archive.getmembers()}
        top = archive.getmembers()[0]
        assert top.name == ".ageval-eval-abc" and top.isdir()
        assert top.mode == 0o700 and top.uid == 0 and top.gid == 0
        assert set(members) == {
            ".ageval-eval-abc",
            ".ageval-eval-abc/task",
            ".ageval-eval-abc/task/evaluator.py",
            ".ageval-eval-abc/task/tests",
            ".ageval-eval-abc/task/tests/data.txt",
            ".ageval-eval-abc/task/tests/link",
            ".ageval-eval-abc/evaluate.py",
            ".ageval-eval-abc/context.json",
        }
        link = members[".ageval-eval-abc/task/tests/link"]
        assert link.issym() and link.linkname == "../../etc/passwd"
        assert members[".ageval-eval-abc/context.json"].mode == 0o600
        runner = archive.extractfile(".ageval-eval-abc/evaluate.py")
        assert runner is not None and runner.read() == b"runner"
