"""Viewer benchmark: how fast `ageval view` opens a 1,000-attempt job and a 50 MB transcript.

    .venv/bin/python benchmarks/bench_view.py [--tasks 250] [-k 2] [--transcript-mb 50]

Writes a job (tasks x 2 agents x k attempts, each with a small activity and transcript, one
with a transcript of --transcript-mb MB) with the result models, then prints:

- the grid built from the files (cold), and the server's answer for it, cold and warm;
- the grid opened in Debian's chromium (/usr/bin/chromium, driven by Playwright) from a
  freshly started server: navigation to `load`, all attempt links in the page (goal: < 2 s);
- an attempt page, and the attempt with the large transcript, served and in the browser;
- writing the whole site as a bundle.
No Docker and no network: the results are files, the server listens on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agevalx.results.build import attempt_index
from agevalx.results.metrics import overall_metrics, task_metrics
from agevalx.results.models import AttemptResult, JobSummary, NodeRef
from agevalx.runner.activity import ActivityJournal
from agevalx.view import ViewServer, open_site, write_bundle
from agevalx.view.bundle import BundleReport

GOAL_SECONDS = 2.0
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
AGENTS = (("oracle", None), ("pi", "gpt-x"))


def key(*parts: object) -> str:
    from agevalx.hashing import digest_json

    return digest_json([str(part) for part in parts])


def write_job(root: Path, tasks: int, k: int, transcript_mb: int) -> tuple[int, str]:
    """The job's files; returns the attempt count and the id of the big-transcript attempt."""
    results = []
    for index in range(tasks):
        task = f"task-{index:04d}"
        for agent, model in AGENTS:
            for attempt in range(k):
                status = ("PASS", "FAIL", "PASS", "ERROR")[(index + attempt) % 4]
                run_key = key("run", task, agent, attempt)
                result = AttemptResult(
                    attempt_id=f"{task}-{attempt}-{run_key[:12]}",
                    dataset_id="bench/view",
                    task_id=task,
                    attempt=attempt,
                    status=status,  # type: ignore[arg-type]
                    score=1.0 if status == "PASS" else 0.0,
                    agents={"solver": agent},
                    models={"solver": model},
                    seconds={"environment": 0.5, "run": 3.0, "evaluate": 1.0},
                    config_digest=key("config", task),
                    nodes=[
                        NodeRef(
                            id=f"run:{task}#{attempt}", kind="run", key=run_key, outcome="computed"
                        ),
                        NodeRef(
                            id=f"evaluate:{task}#{attempt}",
                            kind="evaluate",
                            key=key("evaluate", run_key),
                            outcome="computed",
                        ),
                    ],
                    evaluator_output="checked 3 files\n",
                )
                write_attempt(root, result)
                results.append(result)
    big = results[0].attempt_id
    write_big_transcript(root / ".ageval/runs" / big / "transcript.jsonl", transcript_mb)
    by_task: dict[str, list[AttemptResult]] = {}
    for result in results:
        by_task.setdefault(result.task_id, []).append(result)
    metrics = {
        task: task_metrics([r.status for r in rs], [r.score for r in rs], [None] * len(rs), k)
        for task, rs in by_task.items()
    }
    summary = JobSummary(
        job_id="bench-view-job",
        dataset_id="bench/view",
        k=k,
        tasks=metrics,
        overall=overall_metrics(list(metrics.values())),
        attempts=[attempt_index(result) for result in results],
        summary_key=key("summary"),
    )
    job_dir = root / ".ageval/suite-runs/bench-view-job"
    job_dir.mkdir(parents=True)
    (job_dir / "summary.json").write_text(summary.model_dump_json(indent=2))
    return len(results), big


def write_attempt(root: Path, result: AttemptResult) -> None:
    directory = root / ".ageval/runs" / result.attempt_id
    directory.mkdir(parents=True)
    (directory / "result.json").write_text(result.model_dump_json(indent=2))
    journal = ActivityJournal(directory / "activity.jsonl")
    for step in range(3):
        journal.append(
            "exec",
            command=f"ls -l step-{step}",
            cwd="/attempt/workspace",
            exit_code=0,
            output="total 0\n" * 20,
        )
    line = {"type": "session_update", "update": {"sessionUpdate": "agent_message_chunk"}}
    entries = [{**line, "update": {**line["update"], "content": {"type": "text", "text": "ok"}}}]
    (directory / "transcript.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))


def write_big_transcript(path: Path, megabytes: int) -> None:
    """Messages and thoughts taking turns (each its own item), `megabytes` MB of them."""
    text = "thinking about the next step " * 30
    lines = [
        (json.dumps(_chunk(kind, text)) + "\n").encode()
        for kind in ("agent_message_chunk", "agent_thought_chunk")
    ]
    with path.open("wb") as handle:
        written = 0
        while written < megabytes * 1024 * 1024:
            for line in lines:
                handle.write(line)
                written += len(line)


def _chunk(kind: str, text: str) -> dict[str, object]:
    update = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    return {"type": "session_update", "update": update}


@contextmanager
def serving(root: Path, cache: Path) -> Iterator[str]:
    site = open_site(root, cache)
    server = ViewServer(site)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server.url
    finally:
        server.shutdown()
        server.server_close()
        site.close()


def fetch(url: str) -> tuple[float, int]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as response:
        size = len(response.read())
    return time.perf_counter() - started, size


def timed_open(url: str, selector_count: str) -> tuple[float, float, int]:
    """Seconds to `load`, navigation duration by the page's own clock, links counted."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto("about:blank")
        started = time.perf_counter()
        page.goto(url, wait_until="load")
        count = int(page.evaluate(f"document.querySelectorAll({selector_count!r}).length"))
        wall = time.perf_counter() - started
        navigation = float(
            page.evaluate("performance.getEntriesByType('navigation')[0].duration") / 1000
        )
        browser.close()
    return wall, navigation, count


def verdict(seconds: float) -> str:
    return "met" if seconds < GOAL_SECONDS else "MISSED"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=250)
    parser.add_argument("-k", type=int, default=2)
    parser.add_argument("--transcript-mb", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-view-") as temporary:
        root, cache = Path(temporary) / "dataset", Path(temporary) / "cache"
        started = time.perf_counter()
        attempts, big = write_job(root, args.tasks, args.k, args.transcript_mb)
        print(
            f"job: {attempts} attempts ({args.tasks} tasks x 2 agents x k={args.k}), "
            f"written in {time.perf_counter() - started:.1f} s; "
            f"{big} has a {args.transcript_mb} MB transcript"
        )

        started = time.perf_counter()
        site = open_site(root, cache)
        print(f"grid from the files (cold):             {time.perf_counter() - started:6.3f} s")
        site.close()

        with serving(root, cache) as url:
            cold, size = fetch(url)
            warm, _ = fetch(url)
            print(
                f"grid page served, first / again:        {cold:6.3f} s / {warm:6.3f} s "
                f"({size / 1024:.0f} KiB)"
            )
            other = next(p.name for p in (root / ".ageval/runs").iterdir() if p.name != big)
            seconds, size = fetch(f"{url}attempts/{other}.html")
            print(
                f"an attempt page served:                 {seconds:6.3f} s ({size / 1024:.0f} KiB)"
            )
            seconds, size = fetch(f"{url}attempts/{big}.html")
            print(
                f"the {args.transcript_mb} MB transcript's attempt page:     "
                f"{seconds:6.3f} s ({size / 1024:.0f} KiB, page 1 of the transcript)"
            )

        if CHROMIUM.is_file():
            started = time.perf_counter()
            with serving(root, cache) as url:
                built = time.perf_counter() - started
                wall, navigation, links = timed_open(url, "#grid a.attempt")
            print(
                f"grid in chromium, fresh server:         {wall:6.3f} s to load "
                f"(navigation {navigation:.3f} s), {links} attempt links"
            )
            print(
                f"  with the server's start (grid built): {built + wall:6.3f} s; "
                f"goal < {GOAL_SECONDS:.0f} s: {verdict(built + wall)}"
            )
            with serving(root, cache) as url:
                wall, navigation, items = timed_open(f"{url}attempts/{big}.html", "article.item")
            print(
                f"{args.transcript_mb} MB transcript in chromium:           {wall:6.3f} s to load "
                f"(navigation {navigation:.3f} s), {items} items on page 1"
            )
        else:
            print(f"{CHROMIUM} is missing: browser figures skipped (scripts/setup.sh installs it)")

        site = open_site(root, cache)
        started = time.perf_counter()
        report: BundleReport = write_bundle(site, Path(temporary) / "bundle")
        seconds = time.perf_counter() - started
        site.close()
        print(
            f"bundle: {report.pages} pages, {report.bytes / 1e6:.0f} MB in {seconds:.1f} s "
            f"({report.pages / seconds:.0f} pages/s)"
        )


if __name__ == "__main__":
    main()
