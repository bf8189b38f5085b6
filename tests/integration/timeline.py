"""When each integration test file ran, on which worker: the data to shorten a phase's tail.

The test command sets `$AGEVAL_TEST_TIMELINE` to a file of its run; every pytest process of
an integration phase (each xdist worker) appends one JSON line per test to it: the worker, the
test's file and node id, its start and end (epoch seconds, setup and teardown included) and
the CPU time the whole machine spent meanwhile (`machine_cpu`: /proc/stat, every process, the
engine's and the containers' too). Lines are short and appended with O_APPEND, so the
workers' lines do not mix.

`python -m tests.integration.timeline FILE [--json]` summarises a phase: per file, its worker,
when it started and ended (seconds from the phase's first test) and its wall time; the files
that ended last; and per worker, how long before the phase's end its last file ended (the
seconds that worker, and its share of the cores, stood idle while others finished).

A phase run on one worker (`-p no:xdist`) also gets the files that cost the machine the most
CPU: there each test's figure is its own (with several workers it holds what the others did
meanwhile, and is not shown). The suite is CPU-bound on two cores, so this is the profile
that says which files to make cheaper:

    AGEVAL_TEST_TIMELINE=/tmp/t.jsonl .venv/bin/pytest -p no:xdist -m "not unit and not serial" \
        tests/integration
    .venv/bin/python -m tests.integration.timeline /tmp/t.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agevalx.testing.processes import machine_cpu_seconds

ENV = "AGEVAL_TEST_TIMELINE"


def machine_cpu() -> float:
    """CPU seconds the whole machine has spent busy since it booted (every core); 0 where
    /proc/stat cannot be read."""
    try:
        return machine_cpu_seconds()
    except (OSError, ValueError, IndexError):
        return 0.0


def record(
    path: str, worker: str, file: str, nodeid: str, start: float, end: float, cpu: float = 0.0
) -> None:
    """Append one test's line to the timeline at `path` (`cpu`: the machine's CPU seconds
    over the test)."""
    item = {"worker": worker, "file": file, "test": nodeid, "start": start, "end": end}
    line = json.dumps({**item, "cpu": round(cpu, 2)}, separators=(",", ":"))
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, (line + "\n").encode())
    finally:
        os.close(descriptor)


@dataclass(frozen=True)
class FileSpan:
    """One test file's run: its worker, its first start and last end (seconds from the
    phase's first test), and its tests."""

    file: str
    worker: str
    start: float
    end: float
    tests: int
    cpu: float = 0.0
    """The machine's CPU seconds over the file's tests."""

    @property
    def wall(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class Summary:
    """A phase's timeline: its length, its files by start, and each worker's idle tail."""

    length: float
    files: list[FileSpan]
    idle_tail: dict[str, float]
    """Worker -> seconds between its last test's end and the phase's last test's end."""


def read(lines: Iterable[str]) -> list[dict[str, Any]]:
    """The timeline's records; a line that is not a whole record (a run cut short) is skipped."""
    records = []
    for line in lines:
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and {"worker", "file", "start", "end"} <= item.keys():
            records.append(item)
    return records


def summarise(records: Iterable[Mapping[str, Any]]) -> Summary:
    """Group the records by worker and file (a file runs on one worker under --dist
    loadfile; a file split over workers is shown once per worker)."""
    spans: dict[tuple[str, str], tuple[float, float, int, float]] = {}
    for item in records:
        key = (str(item["worker"]), str(item["file"]))
        start, end = float(item["start"]), float(item["end"])
        first, last, tests, cpu = spans.get(key, (start, end, 0, 0.0))
        spans[key] = (min(first, start), max(last, end), tests + 1, cpu + _cpu(item))
    if not spans:
        return Summary(0.0, [], {})
    origin = min(span[0] for span in spans.values())
    finish = max(span[1] for span in spans.values())
    files = sorted(
        (
            FileSpan(file, worker, start - origin, end - origin, tests, round(cpu, 1))
            for (worker, file), (start, end, tests, cpu) in spans.items()
        ),
        key=lambda span: (span.start, span.file),
    )
    last_end: dict[str, float] = {}
    for span in files:
        last_end[span.worker] = max(last_end.get(span.worker, 0.0), span.end)
    idle = {worker: round(finish - origin - end, 1) for worker, end in sorted(last_end.items())}
    return Summary(round(finish - origin, 1), files, idle)


def _cpu(item: Mapping[str, Any]) -> float:
    value = item.get("cpu", 0.0)
    return float(value) if isinstance(value, int | float) and value > 0 else 0.0


def render(summary: Summary, last: int = 8, longest: int = 12) -> str:
    """The summary as text: the files that ended last, the longest files, the idle tails."""
    out = [f"phase: {summary.length:.0f} s from its first test's start to its last test's end"]
    out.append(f"the {last} files that ended last (start, end, wall in s; worker):")
    out += map(_row, sorted(summary.files, key=lambda span: span.end)[-last:])
    out.append(f"the {longest} longest files:")
    out += map(_row, sorted(summary.files, key=lambda span: span.wall, reverse=True)[:longest])
    tails = ", ".join(f"{worker} {seconds:.0f} s" for worker, seconds in summary.idle_tail.items())
    out.append(f"each worker's wait from its last test's end to the phase's end: {tails}")
    if len(summary.idle_tail) == 1 and any(span.cpu for span in summary.files):
        total = sum(span.cpu for span in summary.files)
        out.append(f"the {longest} files that cost the machine the most CPU (of {total:.0f} s):")
        costly = sorted(summary.files, key=lambda span: span.cpu, reverse=True)[:longest]
        out += (
            f"  {span.cpu:6.0f} CPU-s {span.wall:6.0f} s {span.cpu / max(span.wall, 1e-9):5.2f} "
            f"cores  {span.file}"
            for span in costly
        )
    return "\n".join(out)


def _row(span: FileSpan) -> str:
    return f"  {span.start:6.0f} {span.end:6.0f} {span.wall:6.0f}  {span.worker:4s} {span.file}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("timeline", type=Path)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    try:
        text = args.timeline.read_text(encoding="utf-8")
    except OSError as error:
        print(f"timeline: cannot read {args.timeline}: {error.strerror}", file=sys.stderr)
        return 2
    summary = summarise(read(text.splitlines()))
    if args.json:
        document = asdict(summary)
        for span in document["files"]:
            span["wall"] = round(span["end"] - span["start"], 1)
        print(json.dumps(document, indent=2))
    else:
        print(render(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
