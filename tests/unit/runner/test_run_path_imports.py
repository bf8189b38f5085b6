"""The run path of an ageval-format dataset with the oracle imports only what such a run
needs: not the ACP SDK (the oracle runs no ACP agent), not aiohttp and the model gateway's
server (no role has a model), not the Harbor format, not rich and the reports (nothing is
printed as a table). Counted in a fresh interpreter's `sys.modules`, not timed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.run_path_modules import loaded

pytestmark = pytest.mark.unit

DATASET = Path(__file__).parents[3] / "examples" / "datasets" / "minimal-demo"

# Every module an oracle attempt of an ageval dataset executes, imported as `ageval run` does
# (the command, the operation, the run and evaluate executors, the format's hooks), after the
# dataset is planned; then the oracle executor as the run stage takes it.
PROBE = """
import contextlib, io, json, sys
from agevalx.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(["graph", "show", sys.argv[1], "--cache-dir", sys.argv[2], "--json"])
assert code == 0 and json.loads(out.getvalue())["nodes"], out.getvalue()
import agevalx.cli.run, agevalx.operations.run, agevalx.runner.stage
import agevalx.evaluation.evaluate, agevalx.formats.ageval.verifier, agevalx.formats.ageval.format
from agevalx.runner.stage import executors
executors().get("oracle")
snapshots = {"oracle": sorted(sys.modules)}
executors().get("acp")
snapshots["acp"] = sorted(sys.modules)
print(json.dumps(snapshots))
"""


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    cache = tmp_path_factory.mktemp("cache")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(DATASET), str(cache)],
        capture_output=True,
        text=True,
        check=True,
    )
    snapshots: dict[str, list[str]] = json.loads(done.stdout.splitlines()[-1])
    return snapshots


def test_an_oracle_run_of_an_ageval_dataset_imports_no_acp_gateway_harbor_or_rich(
    snapshots: dict[str, list[str]],
) -> None:
    modules = snapshots["oracle"]
    assert "agevalx.agents.oracle" in modules  # the probe did load the oracle's run path
    assert "agevalx.formats.ageval.format" in modules
    assert loaded(modules) == []


def test_the_probe_sees_the_acp_sdk_once_an_acp_executor_is_taken(
    snapshots: dict[str, list[str]],
) -> None:
    """The check can fail: taking the ACP executor imports the SDK it must not see before."""
    assert set(loaded(snapshots["acp"])) >= {"acp", "agevalx.agents.acp.executor"}


PREFETCH_PROBE = """
import json, sys, threading
from agevalx.runner.stage import PREFETCH, prefetch_executors
prefetch_executors({"oracle"})
seen = {"oracle": "acp" in sys.modules or any(t.name == PREFETCH for t in threading.enumerate())}
prefetch_executors({"oracle", "acp"})
threads = [t for t in threading.enumerate() if t.name == PREFETCH]
for thread in threads:
    thread.join()
seen["acp"] = len(threads) == 1 and "agevalx.agents.acp.executor" in sys.modules
prefetch_executors({"acp"})  # imported already: no second thread
seen["again"] = any(t.name == PREFETCH for t in threading.enumerate())
print(json.dumps(seen))
"""


def test_an_acp_role_starts_importing_the_sdk_on_a_thread_and_an_oracle_role_does_not() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PREFETCH_PROBE], capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout.splitlines()[-1]) == {
        "oracle": False,
        "acp": True,
        "again": False,
    }
    assert done.stderr == ""


def test_a_failing_prefetch_prints_nothing() -> None:
    """An import error is left to the import that needs the module (its error is coded)."""
    script = (
        "from agevalx.runner.stage import _import_quietly\n"
        "_import_quietly('agevalx.no_such_module')\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "ok", "")
