"""A small job on disk for the viewer's tests: results, activity, transcript, a cache."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from agevalx.cache.store import CacheStore
from agevalx.results.models import AttemptResult
from agevalx.view.site import Site
from agevalx.view.source import ViewSource
from tests.unit.reports.builders import make_result, write_job
from tests.unit.view.builders import (
    HOSTILE,
    cache_run,
    message,
    snapshot,
    transcript_lines,
    write_activity,
    write_transcript,
)


@dataclass(frozen=True)
class Job:
    """A k=2 job of one task: attempt 0 passes, attempt 1 fails with hostile output."""

    root: Path
    cache: Path
    passing: AttemptResult
    failing: AttemptResult

    def site(self) -> Site:
        return Site(ViewSource(root=self.root, job=None, cache_dir=self.cache))


@pytest.fixture
def job(tmp_path: Path) -> Job:
    root, cache = tmp_path / "dataset", tmp_path / "cache"
    passing = make_result("alpha", 0, "PASS", score=1.0)
    failing = make_result("alpha", 1, "FAIL", score=0.0).model_copy(
        update={"evaluator_output": f"expected 6, got {HOSTILE}", "details": {"why": HOSTILE}}
    )
    write_job(root, [passing, failing], k=2)
    with CacheStore(cache) as store:
        first = snapshot(store, tmp_path, {"sum.txt": "5\n", "notes.md": "a\nb\n"})
        second = snapshot(store, tmp_path, {"sum.txt": "6\n", "bin.dat": b"\x00\x01"})
        for result in (passing, failing):
            cache_run(store, result, second, second)
    write_activity(root, passing, [("echo 6 > sum.txt", "", 0)], snapshots=[first, second])
    write_activity(
        root,
        failing,
        [("echo 5 > sum.txt", "", 0), (f"printf '{HOSTILE}'", HOSTILE, 3)],
        snapshots=[first],
    )
    write_transcript(root, failing, transcript_lines(message(HOSTILE), message(" and more")))
    return Job(root, cache, passing, failing)
