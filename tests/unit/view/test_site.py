"""The site's pages: what each path answers, what it shows, and the files it refuses."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agevalx.view.pages import page_spans
from agevalx.view.site import Page, Site
from tests.unit.reports.builders import make_result, write_results
from tests.unit.view.builders import HOSTILE, message, transcript_lines, write_transcript
from tests.unit.view.conftest import Job

pytestmark = pytest.mark.unit


def html(page: Page | None) -> str:
    assert page is not None and page.content_type.startswith("text/html")
    return page.body.decode()


def test_the_index_is_the_grid_linking_every_attempt(job: Job) -> None:
    page = html(job.site().route("/"))

    assert 'id="grid"' in page
    assert f'href="attempts/{job.failing.attempt_id}.html"' in page
    assert 'class="badge status-FAIL attempt"' in page
    assert 'href="graph/job-1.html"' in page


def test_an_attempt_page_shows_its_terminal_actions_and_evaluator_output(job: Job) -> None:
    page = html(job.site().route(f"/attempts/{job.failing.attempt_id}.html"))

    assert "echo 5 &gt; sum.txt" in page
    assert 'id="action-2"' in page and "exit 3" in page
    assert "expected 6, got &lt;script&gt;" in page
    assert 'href="../raw/ageval/runs/' in page


def test_agent_output_appears_only_escaped(job: Job) -> None:
    site = job.site()
    pages = [html(site.route(f"/attempts/{job.failing.attempt_id}.html")), html(site.route("/"))]

    for page in pages:
        assert "<script>window" not in page and "<img src=x" not in page
        assert page.count("<script") == 1  # the viewer's own viewer.js
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in pages[0]


def test_file_changes_between_checkpoints_are_shown(job: Job) -> None:
    page = html(job.site().route(f"/attempts/{job.passing.attempt_id}.html"))

    assert "checkpoint" in page and "end of the run stage" in page
    assert "+6" in page and "-5" in page
    assert "bin.dat" in page and "binary" in page


def test_the_node_keys_say_reused_or_computed_and_whether_they_are_cached(job: Job) -> None:
    page = html(job.site().route(f"/attempts/{job.passing.attempt_id}.html"))
    nodes = page[page.index('id="nodes"') :]

    run = next(node for node in job.passing.nodes if node.kind == "run")
    assert run.key in nodes
    assert "computed" in nodes and "reused" in nodes
    assert "hit" in nodes and "miss" in nodes  # the run is cached; the lock and evaluate not


def test_a_long_transcript_is_paged_with_a_link_to_the_raw_file(job: Job) -> None:
    lines = [message(f"chunk {n} " + "x" * 2000, "agent_thought_chunk") for n in range(1000)]
    path = write_transcript(job.root, job.failing, transcript_lines(*lines))
    pages = len(page_spans(path))
    site = job.site()
    attempt = job.failing.attempt_id

    first = html(site.route(f"/attempts/{attempt}.html"))
    second = html(site.route(f"/attempts/{attempt}/transcript-2.html"))

    assert pages == 5  # 2 MB in pages of 512 KiB
    assert (
        f"page 1 of {pages}" in first and f'href="../attempts/{attempt}/transcript-2.html"' in first
    )
    assert "raw transcript.jsonl" in first and "chunk 0 " in first and "chunk 999" not in first
    assert f"page 2 of {pages}" in second and "chunk 1 " not in second
    assert site.route(f"/attempts/{attempt}/transcript-{pages + 1}.html") is None


def test_unknown_pages_are_not_found(job: Job) -> None:
    site = job.site()

    for path in (
        "/attempts/nobody.html",
        "/graph/no-job.html",
        "/static/other.js",
        "/etc/passwd",
        f"/attempts/{job.failing.attempt_id}/actions-2.html",
    ):
        assert site.route(path) is None, path


def test_raw_files_are_served_from_the_state_dir_and_the_cache_objects_only(job: Job) -> None:
    site = job.site()
    attempt = job.failing.attempt_id
    (job.cache / "refs").mkdir(exist_ok=True)
    (job.cache / "refs" / "keep").write_text("{}")

    found = site.route(f"/raw/ageval/runs/{attempt}/result.json")
    blob = next((job.cache / "objects").rglob("*/*/*"))

    assert found is not None and found.file is not None and found.content_type.startswith("text/")
    assert site.route(f"/raw/cache/{blob.relative_to(job.cache).as_posix()}") is not None
    assert site.route("/raw/cache/refs/keep") is None
    assert site.route("/raw/other/x") is None


@pytest.mark.parametrize(
    "path",
    [
        "/raw/ageval/../ageval.yaml",
        "/raw/ageval/%2e%2e/ageval.yaml",
        "/raw/ageval/runs/../../ageval.yaml",
        "/raw/ageval//etc/passwd",
        "/raw/ageval/%2Fetc%2Fpasswd",
        "/raw/ageval/runs/%00",
        "/raw/ageval/runs",
    ],
)
def test_no_path_escapes_the_state_dir(job: Job, path: str) -> None:
    (job.root / "ageval.yaml").write_text("secret")

    assert job.site().route(path) is None


def test_a_symlink_leaving_the_root_is_refused_and_one_inside_is_followed(job: Job) -> None:
    outside = job.root.parent / "secret.txt"
    outside.write_text("secret")
    runs = job.root / ".ageval/runs"
    os.symlink(outside, runs / "leak.txt")
    os.symlink(runs / job.failing.attempt_id / "result.json", runs / "inside.json")

    assert job.site().route("/raw/ageval/runs/leak.txt") is None
    assert job.site().route("/raw/ageval/runs/inside.json") is not None


def test_the_grid_is_rebuilt_when_a_result_is_added(job: Job) -> None:
    site = job.site()
    assert "beta" not in html(site.route("/"))

    write_results(job.root, [make_result("beta", 0, "ERROR")])

    assert "beta" in html(site.route("/"))


def test_an_attempt_without_a_cache_still_shows_its_files(job: Job, tmp_path: Path) -> None:
    from agevalx.view.source import ViewSource

    site = Site(ViewSource(root=job.root, job=None, cache_dir=tmp_path / "missing"))

    page = html(site.route(f"/attempts/{job.failing.attempt_id}.html"))

    assert "echo 5 &gt; sum.txt" in page and "no cache to read the snapshots from" in page
    assert not (tmp_path / "missing").exists()


def test_the_static_files_are_the_packages_own(job: Job) -> None:
    script = job.site().route("/static/viewer.js")
    style = job.site().route("/static/viewer.css")

    assert script is not None and script.content_type.startswith("text/javascript")
    assert b"textContent" in script.body and b"innerHTML" not in script.body
    assert style is not None and style.content_type.startswith("text/css")


def test_a_transcript_entry_too_large_to_parse_is_shown_as_an_excerpt(job: Job) -> None:
    huge = transcript_lines(message(HOSTILE + "q" * (2 * 1024 * 1024)))
    write_transcript(job.root, job.failing, huge)

    page = html(job.site().route(f"/attempts/{job.failing.attempt_id}.html"))

    assert "unreadable" in page and "&lt;script&gt;" in page
    assert len(page) < 200_000


def test_the_attempt_page_shows_the_prompts_the_run_sent(job: Job) -> None:
    sent = {"type": "prompt", "role": "solver", "invocation": 0, "text": "Sum <b>2</b>+4"}
    nested = message("x") | {"update": {"sessionUpdate": "plan", "type": "prompt"}}
    write_transcript(job.root, job.failing, transcript_lines(nested, sent, message("done")))

    page = html(job.site().route(f"/attempts/{job.failing.attempt_id}.html"))

    assert "sent to solver (invocation 0)" in page
    assert page.count("Sum &lt;b&gt;2&lt;/b&gt;+4") == 2  # the prompt section and the transcript
    assert "<b>2</b>" not in page and page.count("sent to ") == 1


def test_an_attempt_without_recorded_prompts_shows_the_task_prompt_files(job: Job) -> None:
    write_transcript(job.root, job.failing, transcript_lines(message("hello")))

    page = html(job.site().route(f"/attempts/{job.failing.attempt_id}.html"))

    assert "sent to " not in page
