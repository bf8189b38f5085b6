"""The views stamp: a no-op run's views are checked by their files' states, and any change to
those files, or to what the views are made from, sends the run back to writing them."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from agevalx.operations import viewstamp
from agevalx.operations.viewstamp import (
    Stamp,
    current_results,
    stamp_path,
    views_digest,
    write_stamp,
)
from agevalx.results.models import AttemptResult

pytestmark = pytest.mark.unit

KEY = "0" * 32
ATTEMPTS = ("a-0", "b-0")


def result(attempt_id: str) -> AttemptResult:
    return AttemptResult(
        attempt_id=attempt_id,
        dataset_id="d",
        task_id="t",
        attempt=0,
        status="PASS",
        score=1.0,
        config_digest="c" * 32,
        nodes=[],
    )


@pytest.fixture
def views(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[Path]]:
    """A dataset root with two attempt directories and a journal file, old enough to trust."""
    monkeypatch.setattr(viewstamp, "RACY_WINDOW_NS", 0)
    runs = tmp_path / ".ageval/runs"
    for name in ("a-0", "b-0"):
        (runs / name / "artifacts").mkdir(parents=True)
        (runs / name / "result.json").write_text(name)
        (runs / name / "artifacts/out.txt").write_text("out")
    journal = tmp_path / ".ageval/graph/run/x.json"
    journal.parent.mkdir(parents=True)
    journal.write_text("{}")
    return tmp_path, [runs / "a-0", runs / "b-0", journal]


def stamp(root: Path, paths: list[Path], digest: str = "d1") -> list[AttemptResult]:
    results = [result("a-0"), result("b-0")]
    time.sleep(0.01)  # the files' ctimes fall before the stamp is recorded
    write_stamp(root, Stamp(KEY, digest, ATTEMPTS), paths[:2], paths[2:], results)
    return results


def test_unchanged_views_give_back_their_results(views: tuple[Path, list[Path]]) -> None:
    root, paths = views
    results = stamp(root, paths)
    assert current_results(root, Stamp(KEY, "d1", ATTEMPTS)) == results
    assert current_results(root, Stamp(KEY, "d2", ATTEMPTS)) is None  # made from something else


@pytest.mark.parametrize(
    "change",
    [
        lambda runs: (runs / "a-0/result.json").write_text("a-0"),  # same bytes, written again
        lambda runs: (runs / "b-0/result.json").unlink(),
        lambda runs: (runs / "b-0/artifacts/new.txt").write_text("x"),  # a file added below
        lambda runs: os.chmod(runs / "a-0/artifacts/out.txt", 0o600),  # only the ctime moves
        lambda runs: (runs.parent / "graph/run/x.json").write_text("{ }"),
    ],
    ids=["rewritten", "deleted", "added", "chmod", "journal"],
)
def test_any_change_to_a_view_file_is_seen(views: tuple[Path, list[Path]], change) -> None:  # type: ignore[no-untyped-def]
    root, paths = views
    stamp(root, paths)
    change(root / ".ageval/runs")
    assert current_results(root, Stamp(KEY, "d1", ATTEMPTS)) is None


def test_a_file_changed_within_the_racy_window_is_not_trusted(
    views: tuple[Path, list[Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, paths = views
    stamp(root, paths)
    monkeypatch.setattr(viewstamp, "RACY_WINDOW_NS", 10 * 1_000_000_000)
    assert current_results(root, Stamp(KEY, "d1", ATTEMPTS)) is None


def test_a_stamp_naming_a_path_outside_the_state_directory_is_refused(
    views: tuple[Path, list[Path]],
) -> None:
    root, paths = views
    stamp(root, paths)
    path = stamp_path(root, KEY)
    document = json.loads(path.read_bytes())
    outside = root / "outside.txt"
    outside.write_text("x")
    info = os.lstat(outside)
    state = [info.st_ino, info.st_size, info.st_mode, info.st_mtime_ns, info.st_ctime_ns]
    document["states"]["../outside.txt"] = state
    path.write_text(json.dumps(document))
    assert current_results(root, Stamp(KEY, "d1", ATTEMPTS)) is None


def test_a_stamp_must_vouch_for_every_attempt_it_gives_results_of(
    views: tuple[Path, list[Path]],
) -> None:
    root, paths = views
    stamp(root, paths)
    assert current_results(root, Stamp(KEY, "d1", ("a-0",))) is None  # results of another job
    assert current_results(root, Stamp(KEY, "d1", ("b-0", "a-0"))) is None
    path = stamp_path(root, KEY)
    document = json.loads(path.read_bytes())
    document["states"] = {}  # a stamp shipped with a dataset would name no state it cannot know
    path.write_text(json.dumps(document))
    assert current_results(root, Stamp(KEY, "d1", ATTEMPTS)) is None


def test_malformed_results_are_no_stamp(views: tuple[Path, list[Path]]) -> None:
    root, paths = views
    stamp(root, paths)
    stamp_path(root, KEY).with_suffix(".results.json").write_text('[{"status": "PASS"}]')
    assert current_results(root, Stamp(KEY, "d1", ATTEMPTS)) is None


def report(outcome: str = "reused", **extra: object) -> SimpleNamespace:
    action = SimpleNamespace(created="2026-01-01", outputs={"o": SimpleNamespace(digest="ab")})
    node = SimpleNamespace(id="run:t#0", key="k1", action=action)
    fields = {"error": None, "tries": [], "retried": None, "action": action, **extra}
    return SimpleNamespace(node=node, outcome=outcome, **fields)


def test_the_digest_covers_keys_and_outputs_and_refuses_what_ran() -> None:
    base = views_digest([report()], ["t-0"], {"root": "/d"})  # type: ignore[list-item]
    assert base is not None
    assert views_digest([report()], ["t-0"], {"root": "/e"}) != base  # type: ignore[list-item]
    assert views_digest([report()], ["t-1"], {"root": "/d"}) != base  # type: ignore[list-item]
    other = report()
    other.action.outputs["o"].digest = "cd"
    assert views_digest([other], ["t-0"], {"root": "/d"}) != base  # type: ignore[list-item]
    for ran in (report("computed"), report("failed"), report(retried="lost"), report(tries=[1])):
        assert views_digest([ran], ["t-0"], {"root": "/d"}) is None  # type: ignore[list-item]


def _rewrite(root: Path, **fields: object) -> None:
    path = stamp_path(root, KEY)
    document = json.loads(path.read_bytes())
    document.update(fields)
    path.write_text(json.dumps(document))


def test_a_stamp_recorded_in_the_future_vouches_for_nothing(
    views: tuple[Path, list[Path]],
) -> None:
    root, paths = views
    stamp(root, paths)
    _rewrite(root, recorded_ns=time.time_ns() + 3600 * 1_000_000_000)
    assert current_results(root, Stamp(KEY, "d1", ATTEMPTS)) is None


def test_a_stamp_file_older_than_its_recording_vouches_for_nothing(
    views: tuple[Path, list[Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dataset shipping a stamp that says it was recorded after the dataset was unpacked
    (so that the unpacked files' ctimes would look old enough): its own file is older."""
    root, paths = views
    stamp(root, paths)
    made = os.lstat(stamp_path(root, KEY)).st_ctime_ns
    _rewrite(root, recorded_ns=made + 60 * 1_000_000_000)
    later = made + 120 * 1_000_000_000
    monkeypatch.setattr(viewstamp.time, "time_ns", lambda: later)
    assert current_results(root, Stamp(KEY, "d1", ATTEMPTS)) is None


def test_results_replaced_beside_their_stamp_are_refused(views: tuple[Path, list[Path]]) -> None:
    root, paths = views
    results = stamp(root, paths)
    forged = [results[0].model_copy(update={"status": "FAIL", "score": 0.0}), results[1]]
    replaced = viewstamp._RESULTS.dump_json(forged)
    stamp_path(root, KEY).with_suffix(".results.json").write_bytes(replaced)
    assert current_results(root, Stamp(KEY, "d1", ATTEMPTS)) is None
