"""Two real jobs of one dataset, with the evaluator edited in between: the first job's graph
page says why its evaluate nodes are stale, and comparing the jobs shows the task that
flipped."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.view.conftest import Dataset, Tab, copy_viewer_dataset, serving

pytestmark = pytest.mark.integration

TASK = "sums-numbers"
ALWAYS_FAIL = """

_scored = evaluate


def evaluate(ctx):
    return {**_scored(ctx), "status": "FAIL", "score": 0.0}
"""


@dataclass
class Rescored:
    dataset: Dataset
    stale: Path
    """A bundle written after the edit, before the second job: the first job is stale."""
    first_job: str
    second_job: str


@pytest.fixture(scope="module")
def rescored(tmp_path_factory: pytest.TempPathFactory, docker_engine: object) -> Rescored:
    base = tmp_path_factory.mktemp("rescored")
    dataset = copy_viewer_dataset(base)
    first = dataset.run("-k", "2")
    with (dataset.root / "tasks" / TASK / "evaluator.py").open("a") as evaluator:
        evaluator.write(ALWAYS_FAIL)
    stale = dataset.bundle(base / "stale-bundle")
    second = dataset.run("-k", "2")
    return Rescored(
        dataset,
        stale,
        Path(first["summary_path"]).parent.name,
        Path(second["summary_path"]).parent.name,
    )


def test_the_graph_page_names_the_edited_evaluator_as_why_evaluation_is_stale(
    rescored: Rescored, tab: Tab
) -> None:
    page = tab.page
    page.goto(rescored.stale.as_uri())
    page.locator("#jobs a.graph-link", has_text=rescored.first_job).click()
    page.wait_for_load_state()

    evaluate = page.locator(f'tr[data-node="evaluate:{TASK}#0"]')
    assert evaluate.get_attribute("data-status") == "miss"
    assert "task_files.evaluator.py" in evaluate.inner_text()
    assert page.locator(f'tr[data-node="run:{TASK}#0"]').get_attribute("data-status") == "hit"
    other = page.locator('tr[data-node="evaluate:hostile-output#0"]')
    assert other.get_attribute("data-status") == "hit"
    tab.screenshot("view-graph-stale")


def test_comparing_the_two_jobs_shows_the_task_that_flipped(rescored: Rescored, tab: Tab) -> None:
    page = tab.page
    with serving(rescored.dataset) as url:
        page.goto(url)
        heads = page.locator("#grid thead th[data-col] .job").all_inner_texts()
        assert heads == [rescored.first_job, rescored.second_job]
        assert "re-evaluated after this job" in page.locator(".warnings").inner_text()

        page.select_option("#compare-a", "c0")
        page.select_option("#compare-b", "c1")

        assert page.locator("#flips").inner_text() == f"1 flipped: {TASK} (PASS → FAIL)"
        assert page.locator("#grid tr.flipped").get_attribute("data-task") == TASK
        page.check("#only-flipped")
        visible = page.locator("#grid tbody tr:not(.hidden)")
        assert visible.count() == 1
        tab.screenshot("view-compare-jobs")

        page.uncheck("#only-flipped")
        page.locator('#grid th[data-sort="c1"] .agent').click()
        order = page.locator("#grid tbody tr").evaluate_all("rows => rows.map(r => r.dataset.task)")
        assert order == ["hostile-output", TASK]  # both FAIL under the second job: by name
        page.locator('#grid th[data-sort="c0"] .agent').click()
        order = page.locator("#grid tbody tr").evaluate_all("rows => rows.map(r => r.dataset.task)")
        assert order == [TASK, "hostile-output"]  # PASS first under the first job
