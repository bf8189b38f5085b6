"""The integration phases' timeline (tests/integration/timeline.py): what the test command
prints after each phase to show which files end it and how long each worker waits."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from tests.integration import timeline

pytestmark = pytest.mark.unit


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_files_are_grouped_per_worker_and_the_idle_tails_measured(tmp_path: Path) -> None:
    path = str(tmp_path / "timeline.jsonl")
    timeline.record(path, "gw0", "a/test_long.py", "a/test_long.py::one", 100.0, 130.0)
    timeline.record(path, "gw0", "a/test_long.py", "a/test_long.py::two", 130.0, 190.0)
    timeline.record(path, "gw1", "b/test_short.py", "b/test_short.py::one", 101.0, 111.0)
    timeline.record(path, "gw1", "c/test_next.py", "c/test_next.py::one", 111.0, 150.0)
    summary = timeline.summarise(timeline.read(_lines(tmp_path / "timeline.jsonl")))
    assert summary.length == 90.0
    spans = {(span.worker, span.file): span for span in summary.files}
    assert (spans["gw0", "a/test_long.py"].start, spans["gw0", "a/test_long.py"].end) == (0, 90)
    assert spans["gw0", "a/test_long.py"].tests == 2
    assert spans["gw1", "c/test_next.py"].wall == 39.0
    assert summary.idle_tail == {"gw0": 0.0, "gw1": 40.0}
    text = timeline.render(summary)
    assert text.splitlines()[0].startswith("phase: 90 s")
    assert "gw1 40 s" in text and "gw0 0 s" in text


def test_a_line_cut_short_or_foreign_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "timeline.jsonl"
    timeline.record(str(path), "gw0", "a.py", "a.py::t", 1.0, 2.0)
    with path.open("a") as handle:
        handle.write('{"worker": "gw1", "file": "b.py", "sta')  # killed mid-line
        handle.write("\n[1, 2]\n")
    records = timeline.read(_lines(path))
    assert [record["file"] for record in records] == ["a.py"]
    assert timeline.summarise([]).files == []


def _append_many(path: str, worker: str) -> None:
    for index in range(200):
        timeline.record(path, worker, f"{worker}.py", f"{worker}.py::t{index}", index, index + 1)


def test_workers_appending_at_once_leave_whole_lines(tmp_path: Path) -> None:
    path = str(tmp_path / "timeline.jsonl")
    workers = [
        multiprocessing.Process(target=_append_many, args=(path, f"gw{n}")) for n in range(4)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    lines = _lines(tmp_path / "timeline.jsonl")
    assert len(lines) == 800
    assert all(json.loads(line)["test"].startswith(json.loads(line)["worker"]) for line in lines)


def test_the_command_prints_json_and_refuses_a_missing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "timeline.jsonl"
    timeline.record(str(path), "gw0", "a.py", "a.py::t", 10.0, 25.5)
    assert timeline.main([str(path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["length"] == 15.5
    assert document["files"][0]["wall"] == 15.5
    assert timeline.main([str(tmp_path / "absent.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_one_workers_phase_lists_the_files_that_cost_the_machine_the_most_cpu(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "timeline.jsonl")
    timeline.record(path, "main", "a.py", "a.py::one", 0.0, 10.0, cpu=4.0)
    timeline.record(path, "main", "a.py", "a.py::two", 10.0, 20.0, cpu=6.5)
    timeline.record(path, "main", "b.py", "b.py::one", 20.0, 25.0, cpu=30.0)
    summary = timeline.summarise(timeline.read(_lines(tmp_path / "timeline.jsonl")))
    assert {span.file: span.cpu for span in summary.files} == {"a.py": 10.5, "b.py": 30.0}
    lines = timeline.render(summary).splitlines()
    heading = lines.index("the 12 files that cost the machine the most CPU (of 40 s):")
    # b.py first: 30 CPU-s in 5 s, 6 cores (the engine's and containers' work included)
    assert lines[heading + 1].split()[:6] == ["30", "CPU-s", "5", "s", "6.00", "cores"]
    assert lines[heading + 1].endswith("b.py") and lines[heading + 2].endswith("a.py")


def test_with_several_workers_no_cpu_is_shown_nor_for_old_lines(tmp_path: Path) -> None:
    path = tmp_path / "timeline.jsonl"
    timeline.record(str(path), "gw0", "a.py", "a.py::t", 0.0, 10.0, cpu=5.0)
    timeline.record(str(path), "gw1", "b.py", "b.py::t", 0.0, 10.0, cpu=5.0)
    assert "most CPU" not in timeline.render(timeline.summarise(timeline.read(_lines(path))))
    old = '{"worker": "main", "file": "c.py", "test": "c.py::t", "start": 1, "end": 2}'
    (summary_file,) = timeline.summarise(timeline.read([old])).files
    assert summary_file.cpu == 0.0


def test_the_machines_cpu_only_grows() -> None:
    first = timeline.machine_cpu()
    sum(range(2_000_000))
    assert timeline.machine_cpu() >= first > 0
