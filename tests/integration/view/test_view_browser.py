"""`ageval view` in a browser, over a real k=2 job: the grid, an attempt, the bundle, and
agent output that tries to run script."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.view.conftest import Dataset, Tab, serving

pytestmark = pytest.mark.integration

HOSTILE_TASK = "hostile-output"
PWNED = "window.__pwned"


def test_clicking_a_failing_attempt_in_the_grid_shows_its_terminal_actions_and_evaluation(
    k2_job: Dataset, tab: Tab
) -> None:
    page = tab.page
    with serving(k2_job) as url:
        page.goto(url)
        assert page.locator("#grid tbody tr").count() == 2
        assert page.locator("#grid a.attempt.status-PASS").count() == 2
        failing = page.locator("#grid a.attempt.status-FAIL")
        assert failing.count() == 2
        tab.screenshot("view-grid-k2")

        failing.first.click()
        page.wait_for_load_state()

        assert page.url.endswith(f"/attempts/{k2_job.attempts(HOSTILE_TASK)[0]}.html")
        actions = page.locator("#actions").inner_text()
        assert "printf '%s\\n'" in actions and "agent terminal" in actions
        assert "<script>window.__pwned = 'terminal'</script>" in actions  # its output, as text
        evaluation = page.locator("#evaluation").inner_text()
        assert "FAIL" in evaluation
        assert "sum.txt holds: <b onmouseover=alert(1)>5</b>" in evaluation
        assert "expected 6, got" in evaluation
        tab.screenshot("view-attempt-failing")


def test_the_bundle_opens_from_a_file_url_and_its_grid_filters_and_links_work(
    k2_job: Dataset, tab: Tab, tmp_path: Path
) -> None:
    index = k2_job.bundle(tmp_path / "bundle")
    page = tab.page

    page.goto(index.as_uri())
    rows = page.locator("#grid tbody tr")
    assert rows.count() == 2
    page.fill("#search", "sums")
    assert page.locator("#grid tbody tr:not(.hidden)").count() == 1
    page.fill("#search", "")
    page.uncheck('input[name="status"][value="FAIL"]')
    visible = page.locator("#grid tbody tr:not(.hidden) th.task")
    assert visible.all_inner_texts() == ["sums-numbers"]
    page.check('input[name="status"][value="FAIL"]')
    tab.screenshot("view-bundle-grid")

    page.locator("#grid a.attempt.status-PASS").first.click()
    page.wait_for_load_state()

    assert page.url.startswith("file://") and "/attempts/sums-numbers-0-" in page.url
    assert "date +%s%N" in page.locator("#actions").inner_text()
    assert "+6" in page.locator("#changes").inner_text()
    raw = page.locator("#files a", has_text="transcript.jsonl").get_attribute("href")
    assert raw is not None and (Path(page.url.removeprefix("file://")).parent / raw).is_file()
    tab.screenshot("view-bundle-attempt")


def test_hostile_agent_output_is_shown_as_text_and_runs_no_script(
    k2_job: Dataset, tab: Tab, tmp_path: Path
) -> None:
    attempt = k2_job.attempts(HOSTILE_TASK)[0]
    bundle = k2_job.bundle(tmp_path / "bundle")
    page = tab.page
    with serving(k2_job) as url:
        for address in (
            f"{url}attempts/{attempt}.html",
            (bundle.parent / "attempts" / f"{attempt}.html").as_uri(),
            url,
        ):
            page.goto(address)
            page.wait_for_load_state("load")
            page.mouse.move(200, 200)

            assert page.evaluate(f"typeof {PWNED}") == "undefined", address
            assert page.locator("img[onerror], b[onmouseover]").count() == 0, address
            if address != url:
                text = page.locator("#transcript").inner_text()
                assert "<script>window.__pwned = 'message'; alert('message')</script>" in text
                assert "</pre></code><script>window.__pwned = 'closing'</script>" in text
                assert page.locator("main script").count() == 0
        tab.screenshot("view-attempt-hostile")
    assert tab.dialogs == []
