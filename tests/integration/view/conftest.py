"""The viewer's browser tests: real jobs in Docker, Debian's chromium driven by Playwright.

No browser is downloaded: Playwright launches /usr/bin/chromium (scripts/setup.sh installs
it). Screenshots are saved under tests/artifacts/ (ignored by git); each test prints where.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agevalx.view import ViewServer, open_site

DATASET = Path(__file__).resolve().parents[1] / "data/viewer"
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
"""In the clone already (its .gitkeep): made by the first screenshot, it changed tests/, a
folder on the import path whose change a command memo run beside it must not see
(`run/test_command_memo.py` then failed: "tests changed within the racy window")."""
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


def ageval(*args: str) -> dict[str, Any]:
    """`ageval <args> --json` in its own process; the printed document (exit code 0)."""
    done = subprocess.run(
        [sys.executable, "-m", "agevalx", *args, "--json"],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    document: dict[str, Any] = json.loads(done.stdout)
    return document


@dataclass
class Dataset:
    """A copy of tests/integration/data/viewer and the cache its jobs ran with."""

    root: Path
    cache: Path
    jobs: list[dict[str, Any]] = field(default_factory=list)
    """The `ageval run --json` documents, in order."""

    def run(self, *args: str) -> dict[str, Any]:
        document = ageval("run", str(self.root), "--cache-dir", str(self.cache), *args)
        self.jobs.append(document)
        return document

    def attempts(self, task: str, document: dict[str, Any] | None = None) -> list[str]:
        results = (document or self.jobs[-1])["results"]
        return [result["attempt_id"] for result in results if result["task_id"] == task]

    def bundle(self, target: Path) -> Path:
        ageval("view", str(self.root), "--cache-dir", str(self.cache), "--bundle", str(target))
        return target / "index.html"


def copy_viewer_dataset(base: Path) -> Dataset:
    root = base / "viewer"
    shutil.copytree(DATASET, root, ignore=shutil.ignore_patterns(".ageval"))
    return Dataset(root, base / "cache")


@pytest.fixture(scope="module")
def k2_job(tmp_path_factory: pytest.TempPathFactory, docker_engine: object) -> Dataset:
    """The viewer dataset run once with -k 2 (recovery state kept): sums-numbers passes
    twice, hostile-output fails twice and its every output is markup."""
    dataset = copy_viewer_dataset(tmp_path_factory.mktemp("k2-job"))
    dataset.run("-k", "2", "--keep-recovery-state")
    return dataset


@contextmanager
def serving(dataset: Dataset) -> Iterator[str]:
    """The viewer of `dataset` on 127.0.0.1 while the block runs; yields its URL."""
    site = open_site(dataset.root, dataset.cache)
    server = ViewServer(site)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server.url
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
        site.close()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not CHROMIUM.is_file():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/setup.sh (it installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@dataclass
class Tab:
    """A browser page, and every dialog (alert, confirm, prompt) a script opened in it."""

    page: Any
    dialogs: list[str]

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        print(f"screenshot: {path}")
        return path


@pytest.fixture
def tab(browser: Any) -> Iterator[Tab]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    dialogs: list[str] = []

    def dismiss(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", dismiss)
    yield Tab(page, dialogs)
    context.close()
