"""The viewer shows the failure class of an ERROR attempt, on its page and in the grid."""

from __future__ import annotations

from pathlib import Path

import pytest

from agevalx.results.models import AttemptResult, ErrorInfo, TryRecord
from agevalx.view.grid import build_grid
from agevalx.view.site import Site
from agevalx.view.source import ViewSource
from tests.unit.reports.builders import make_result, write_results
from tests.unit.view.builders import HOSTILE

pytestmark = pytest.mark.unit


def _failed(task: str, attempt: int, code: str, **extra: object) -> AttemptResult:
    error = ErrorInfo(code=code, stage="run", message=f"lost {HOSTILE}")
    return make_result(task, attempt, "ERROR").model_copy(update={"error": error, **extra})


@pytest.fixture
def source(tmp_path: Path) -> ViewSource:
    retried = [
        TryRecord(number=1, stage="run", code="environment_lost", message=f"killed {HOSTILE}")
    ]
    write_results(
        tmp_path / "dataset",
        [
            make_result("alpha", 0, "PASS", score=1.0),
            _failed("alpha", 1, "model_upstream_unavailable", tries=retried),
            _failed("alpha", 2, "agent_crashed"),
            _failed("beta", 0, "environment_lost"),
        ],
    )
    return ViewSource(root=tmp_path / "dataset", job=None, cache_dir=tmp_path / "cache")


def _html(site: Site, path: str) -> str:
    page = site.route(path)
    assert page is not None
    return page.body.decode()


def test_the_grid_labels_each_error_with_its_class(source: ViewSource) -> None:
    grid = build_grid(source)
    (column,) = grid.columns
    alpha = column.cells["alpha"]
    assert [a.failure_class for a in alpha.attempts] == [None, "infrastructure", "agent"]
    assert alpha.metrics.infrastructure == 1 and alpha.verdict == "MIXED"
    assert column.cells["beta"].verdict == "INFRA"  # nothing counted: no verdict to give

    page = _html(Site(source), "/")
    assert ">ERROR·infra</a>" in page and ">ERROR·agent</a>" in page
    assert "infrastructure failure; model_upstream_unavailable: lost &lt;script&gt;" in page
    assert 'data-verdict="INFRA"' in page
    assert "2 not scored" in page  # the column's overall metrics
    assert "<script>window" not in page


def test_an_attempt_page_shows_the_class_and_the_earlier_tries_escaped(
    source: ViewSource,
) -> None:
    site = Site(source)
    (retried,) = [
        cell
        for cell in build_grid(source).columns[0].cells["alpha"].attempts
        if cell.failure_class == "infrastructure"
    ]
    page = _html(site, f"/attempts/{retried.attempt_id}.html")
    assert "infrastructure: not the agent&#x27;s fault" in page
    assert "try 1: environment_lost (infrastructure, run stage): killed &lt;script&gt;" in page
    assert "<script>window" not in page
