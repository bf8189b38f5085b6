"""An attempt's lineage in the browser: a fork and a replay grown from it, the replay's first
divergence linked to the terminal action it replayed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.view.conftest import Tab, ageval, copy_viewer_dataset, serving

pytestmark = pytest.mark.integration

TASK = "sums-numbers"


def test_a_fork_and_a_diverging_replay_appear_in_the_lineage_of_their_source(
    tmp_path: Path, docker_engine: object, tab: Tab
) -> None:
    dataset = copy_viewer_dataset(tmp_path)
    dataset.run("--task", TASK, "--keep-recovery-state")
    (source,) = dataset.attempts(TASK)
    cache = ("--cache-dir", str(dataset.cache))
    replay = ageval("replay", str(dataset.root), "--run", source, *cache)
    cut = ageval("checkpoints", str(dataset.root), "--run", source)["checkpoints"][0]["seq"]
    fork = dataset.run("--task", TASK, "--fork", source, "--checkpoint", str(cut), "--model", "m2")
    (forked,) = dataset.attempts(TASK, fork)
    assert replay["status"] == "diverged"  # the agent's `date +%s%N` printed another time

    page = tab.page
    with serving(dataset) as url:
        page.goto(f"{url}attempts/{source}.html")
        lineage = page.locator("#lineage")
        branches = lineage.locator("table.branches tbody tr")
        assert branches.all_inner_texts()[0].startswith("fork")
        assert "m2" in branches.nth(0).inner_text()
        assert replay["replay_id"] in branches.nth(1).inner_text()
        assert "diverged" in lineage.locator(".replay").inner_text()
        tab.screenshot("view-lineage")

        lineage.locator(".replay a", has_text="step").click()
        target = page.locator(":target")
        assert "date +%s%N" in target.locator("pre.command").inner_text()

        page.goto(f"{url}attempts/{source}.html")
        page.locator("#lineage a", has_text=forked).click()
        page.wait_for_load_state()
        assert page.url.endswith(f"/attempts/{forked}.html")
        assert f"a fork of {source} at checkpoint {cut}" in page.locator("#lineage").inner_text()
