"""The setup steps the evaluator's own Python runs as root in a scoring container, where the
image's `chown` and `rm` are the agent's to replace: `verifier.OWN` (`chown -R`) and
`collect.REPLACE` (`rm -rf`, `mkdir -p`). Here on this machine's Python, in a temporary
folder, with links that point out of it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agevalx.formats.ageval.verifier import OWN
from agevalx.runner.collect import REPLACE

pytestmark = pytest.mark.unit


def _run(script: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-S", "-c", script, *arguments]
    return subprocess.run(argv, capture_output=True, text=True, check=False)


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_own_gives_every_entry_to_the_user_and_follows_no_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("not the evaluator's\n")
    private = tmp_path / "private"
    (private / "deep").mkdir(parents=True)
    (private / "deep" / "evaluate.py").write_text("")
    (private / "link").symlink_to(outside)
    workspace = tmp_path / "workspace-link"
    workspace.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "kept.txt").write_text("")
    made = tmp_path / "home"
    ran = _run(OWN, "4321:4322", str(private), str(made), str(workspace))
    assert ran.returncode == 0, ran.stderr
    for path in (private, private / "deep", private / "deep" / "evaluate.py", made):
        assert (path.stat().st_uid, path.stat().st_gid) == (4321, 4322), path
    assert (private / "link").lstat().st_uid == 4321  # the link itself
    assert outside.stat().st_uid == 0  # not what it points to
    assert workspace.lstat().st_uid == 4321
    assert (tmp_path / "elsewhere" / "kept.txt").stat().st_uid == 0  # a linked tree is not walked


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_own_without_a_group_keeps_the_group_and_an_unknown_name_fails_with_a_message(
    tmp_path: Path,
) -> None:
    target = tmp_path / "private"
    target.mkdir()
    before = target.stat().st_gid
    assert _run(OWN, "4321", str(target)).returncode == 0
    assert (target.stat().st_uid, target.stat().st_gid) == (4321, before)
    unknown = _run(OWN, "no-such-user-here", str(target))
    assert unknown.returncode == 1
    assert "no 'no-such-user-here' in /etc/passwd" in unknown.stderr
    assert target.stat().st_uid == 4321


def test_replace_removes_a_tree_or_a_link_but_never_what_a_link_points_to(
    tmp_path: Path,
) -> None:
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "data.txt").write_text("mine\n")
    tree = tmp_path / "srv" / "data"
    tree.mkdir(parents=True)
    (tree / "inner-link").symlink_to(kept, target_is_directory=True)
    (tree / "old.txt").write_text("")
    assert _run(REPLACE, str(tree), str(tree.parent)).returncode == 0
    assert not tree.exists() and tree.parent.is_dir()
    link = tmp_path / "var" / "summary"
    link.parent.mkdir()
    link.symlink_to(kept, target_is_directory=True)
    assert _run(REPLACE, str(link), str(link.parent)).returncode == 0
    assert not os.path.lexists(link)
    assert (kept / "data.txt").read_text() == "mine\n"
    missing = tmp_path / "new" / "parents" / "entry"
    assert _run(REPLACE, str(missing), str(missing.parent)).returncode == 0
    assert missing.parent.is_dir() and not missing.exists()
