"""The bundle: every page as a file, every link inside it resolving, written atomically."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from agevalx.view.bundle import MARKER_FILE, write_bundle
from agevalx.view.errors import ViewError
from tests.unit.view.builders import message, transcript_lines, write_transcript
from tests.unit.view.conftest import Job

pytestmark = pytest.mark.unit
HREF = re.compile(r'(?:href|src)="([^"#]+)(?:#[^"]*)?"')


def test_the_bundle_holds_every_page_and_the_raw_files_they_link(job: Job, tmp_path: Path) -> None:
    report = write_bundle(job.site(), tmp_path / "bundle")
    root = report.directory

    assert report.index == root / "index.html" and report.index.is_file()
    assert report.attempts == 2
    for attempt in (job.passing, job.failing):
        assert (root / "attempts" / f"{attempt.attempt_id}.html").is_file()
        assert (root / "raw/ageval/runs" / attempt.attempt_id / "result.json").is_file()
    assert (root / "graph/job-1.html").is_file()
    assert (root / "static/viewer.js").is_file() and (root / "static/viewer.css").is_file()


def test_every_link_of_every_page_resolves_inside_the_bundle(job: Job, tmp_path: Path) -> None:
    lines = [message("x" * 3000, "agent_thought_chunk") for _ in range(400)]
    write_transcript(job.root, job.failing, transcript_lines(*lines))
    root = write_bundle(job.site(), tmp_path / "bundle").directory

    pages = sorted(root.rglob("*.html"))
    assert any("transcript-2.html" in page.name for page in pages)
    for page in pages:
        for href in HREF.findall(page.read_text()):
            target = (page.parent / unquote(href)).resolve()
            assert target.is_relative_to(root.resolve()), (page, href)
            assert target.is_file(), (page.relative_to(root), href)


def test_a_directory_that_is_not_a_bundle_is_never_overwritten(job: Job, tmp_path: Path) -> None:
    target = tmp_path / "mine"
    target.mkdir()
    (target / "thesis.tex").write_text("precious")

    with pytest.raises(ViewError) as caught:
        write_bundle(job.site(), target)

    assert caught.value.code == "view_bundle_not_empty"
    assert [p.name for p in target.iterdir()] == ["thesis.tex"]


def test_an_earlier_bundle_is_replaced_whole(job: Job, tmp_path: Path) -> None:
    target = tmp_path / "bundle"
    write_bundle(job.site(), target)
    (target / "attempts" / "stale.html").write_text("old")

    write_bundle(job.site(), target)

    assert (target / MARKER_FILE).is_file() and (target / "index.html").is_file()
    assert not (target / "attempts" / "stale.html").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".bundle")] == []
