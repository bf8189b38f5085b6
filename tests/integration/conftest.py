"""Integration fixtures: a reachable Docker engine and the offline base image are required."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"

LONGEST_FIRST = (
    "longrun/test_soak.py",
    "cluster/test_cluster.py",
    "agents/catalog/test_openclaw.py",
    "harbor/test_parity.py",
    "recovery/test_resume_faults.py",
    "harbor/test_harbor_agent.py",
    "agents/test_pi_gateway.py",
    "scoring/test_scoring_hosts.py",
    "recovery/test_orphans.py",
    "recovery/test_fork_replay.py",
    "harbor/test_separate_verifier.py",
    "run/test_run_oracle.py",
    "agents/catalog/test_openhands.py",
    "harbor/test_harbor_run_rules.py",
    "agents/catalog/test_opencode.py",
    "harbor/test_harbor_agents.py",
    "agents/catalog/test_mini_swe_agent.py",
    "cache/test_s3_remote.py",
    "agents/catalog/test_qwen_code.py",
    "recovery/test_lineage.py",
    "cache/test_two_machines.py",
    "run/test_command_memo.py",
    "recovery/test_infra_failures.py",
    "agents/catalog/test_gemini_cli.py",
    "harbor/test_plugin_verifier.py",
    "run/test_examples.py",
    "agents/test_pi.py",
    "agents/catalog/test_claude_code.py",
    "agents/test_acp_exec_pool.py",
    "security/test_hostile_tasks.py",
    "run/test_attempt_engine_calls.py",
    "agents/catalog/test_pi.py",
    "recovery/test_egress_recovery.py",
    "recovery/test_job_continue.py",
    "harbor/test_job_parity.py",
    "run/test_bounded_memory.py",
    "agents/catalog/test_codex.py",
    "run/test_incremental_checkpoints.py",
    "scoring/test_standby_network.py",
    "agents/test_acp_in_container.py",
    "view/test_view_browser.py",
    "agents/test_egress.py",
)
"""The test files that take 20 s or more (`--durations`), longest first: the workers take
them in this order (with `--no-loadscope-reorder`, as scripts/test.sh runs them: pytest-xdist
otherwise orders files by their number of tests), then the shorter files in collection order,
so the files that end the phase are short ones and no worker idles long while another
finishes (the first two run in the serial phase, side by side). Left to collection order,
recovery/, run/ and scoring/'s long files came last: the phase's four workers ended up to 28 s
apart."""


def _relative(item: pytest.Item) -> str | None:
    """The item's file relative to this folder (`run/test_x.py`), None when outside it."""
    here, path = Path(__file__).parent, Path(item.path)
    return path.relative_to(here).as_posix() if path.is_relative_to(here) else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        relative = _relative(item)
        return LONGEST_FIRST.index(relative) if relative in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: each file's tests keep their order


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """With `$AGEVAL_TEST_TIMELINE` set (the test command sets it), one line per test: its
    worker, file, start, end and the machine's CPU meanwhile (`tests/integration/timeline.py`
    summarises them)."""
    from tests.integration import timeline

    path = os.environ.get(timeline.ENV)
    start, cpu = time.time(), timeline.machine_cpu() if path else 0.0
    yield
    if path:
        name = _relative(item) or str(item.path)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        spent = timeline.machine_cpu() - cpu
        timeline.record(path, worker, name, item.nodeid, start, time.time(), spent)


def pytest_configure(config: pytest.Config) -> None:
    """Each pytest process (each xdist worker of either phase) runs its ageval under an
    owner scope of its own (`$AGEVAL_OWNER_SCOPE`, inherited by the ageval processes its tests
    start): a run's orphan sweep then takes only what this process's own tests' killed ageval
    processes left, never the leftovers another worker's test is about to resume or count."""
    from agevalx.environments.owners import SCOPE_ENV

    os.environ[SCOPE_ENV] = f"tests-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"


def this_workers(*labels: str) -> list[str]:
    """Docker label filters `labels` narrowed to what this pytest process and the ageval
    processes its tests start made (its owner scope, `pytest_configure`). An attempt's id is a
    content hash: another worker's test running the same task at the same moment labels its
    containers alike (a test counting what it left once found another's live containers)."""
    from agevalx.environments.owners import OWNER_SCOPE, SCOPE_ENV

    return [*labels, f"{OWNER_SCOPE}={os.environ[SCOPE_ENV]}"]


def _machine_bundles_dir() -> Path:
    from agevalx.cache.location import default_cache_dir

    explicit = os.environ.get("AGEVAL_TEST_BUNDLES_DIR")
    return Path(explicit) if explicit else default_cache_dir() / "bundles"


MACHINE_BUNDLES = _machine_bundles_dir()
"""Read when the suite is collected, before each test gets a cache folder of its own: the
machine's bundles (where `ageval agents build --all` put them), or $AGEVAL_TEST_BUNDLES_DIR."""


@pytest.fixture(autouse=True)
def _machine_bundles(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every integration test's ageval uses the machine's bundles folder, as a user's runs
    do, not one in its own empty cache: the evaluator's Python (`agevalx.evaluation.runtime`)
    is extracted once per machine, not once per test (about 30 execs and 30 copies out of a
    container each time). A test that needs a fresh folder sets `$AGEVAL_BUNDLES_DIR` itself;
    `run/test_attempt_engine_calls.py` extracts the runtime into one in every suite run."""
    from agevalx.agents.bundles import BUNDLES_ENV

    monkeypatch.setenv(BUNDLES_ENV, str(MACHINE_BUNDLES))
    return MACHINE_BUNDLES


@pytest.fixture(scope="session")
def docker_engine() -> object:
    from agevalx.environments.engine import client, image_exists
    from tests.integration.engine_events import EVENTS

    engine = client()  # raises docker_unavailable with a hint: run scripts/setup-docker.sh
    if not image_exists("ageval/base:bookworm"):
        pytest.fail("the base image ageval/base:bookworm is missing: run scripts/setup-docker.sh")
    EVENTS.start()
    return engine


@pytest.fixture
def standby_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scoring placeholders whatever else runs on the engine (`$AGEVAL_STANDBY=on`), for the
    tests that count them: beside the suite's other workers, a run left to choose starts none
    (`environments.standby`)."""
    from agevalx.environments.standby import SETTING

    monkeypatch.setenv(SETTING, "on")


@pytest.fixture
def copy_dataset(tmp_path: Path, docker_engine: object):  # type: ignore[no-untyped-def]
    """Copy a dataset (from tests/integration/data or examples/datasets) into tmp_path."""

    def copy(source: Path) -> Path:
        target = tmp_path / source.name
        shutil.copytree(source, target, ignore=shutil.ignore_patterns(".ageval"))
        return target

    return copy


def committed_image(run_key: str) -> str:
    """The image a cached run node committed (named by its content, not by its key)."""
    from agevalx.cache.location import default_cache_dir
    from agevalx.cache.store import CacheStore

    action = CacheStore(default_cache_dir()).get_action("run", run_key)
    assert action is not None, f"no cached run {run_key}"
    return str(action.meta["committed_image"])


BASE_IMAGE = "ageval/base:bookworm"


def _docker(*args: str) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def egress_outside(docker_engine: object) -> Iterator[dict[str, str]]:
    """A network the test creates with two web servers on it (`allowed-*`, `denied-*`), for
    the egress fences to let out or not; removed afterwards."""
    suffix = uuid.uuid4().hex[:8]
    network = f"ageval-egress-test-{suffix}"
    names = {"allowed": f"allowed-{suffix}", "denied": f"denied-{suffix}"}
    _docker("network", "create", network)
    try:
        for name in names.values():
            server = ["python3", "-m", "http.server", "8000", "--directory", "/"]
            _docker("run", "-d", "--name", name, "--network", network, BASE_IMAGE, *server)
        template = "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}"
        denied_ip = _docker("inspect", "-f", template, names["denied"]).strip()
        yield {"network": network, **names, "denied_ip": denied_ip}
    finally:
        subprocess.run(["docker", "rm", "-f", *names.values()], capture_output=True, check=False)
        subprocess.run(["docker", "network", "rm", network], capture_output=True, check=False)
