"""What one fresh attempt asks of the Docker engine: two containers, few execs and copies,
every container removed before the run returns (removals run in the background), and an
evaluator's Python whose modules come precompiled."""

from __future__ import annotations

import collections
import math
import time
from pathlib import Path

import pytest

from agevalx.agents.bundles import bundles_dir
from agevalx.environments.container import (
    SESSION,
    AttemptContainer,
    ContainerSpec,
    find_container,
    wait_for_removals,
)
from agevalx.environments.engine import client
from agevalx.evaluation.runtime import runner_imports
from tests.integration.run.test_run_oracle import RUNCASES, run_json

pytestmark = pytest.mark.integration


def session_events(started: float) -> collections.Counter[str]:
    """The engine's container events of this process since `started`, by action."""
    events = client().events(
        since=int(started),
        until=int(time.time()) + 1,
        decode=True,
        filters={"type": "container", "label": f"ageval.session={SESSION}"},
    )
    return collections.Counter(str(event["Action"]).split(":")[0] for event in events)


def test_a_fresh_attempt_uses_two_containers_seven_execs_and_leaves_nothing(
    copy_dataset, capsys, _isolated_cache: Path
) -> None:
    dataset = copy_dataset(RUNCASES)
    run_json(capsys, str(dataset), "--task", "echo-pass")  # the image and the runtime
    started = math.ceil(time.time())  # the engine's event times are whole seconds
    time.sleep(started - time.time() + 0.05)
    code, document = run_json(capsys, str(dataset), "--task", "echo-pass", "--fresh")
    assert code == 0 and document["results"][0]["status"] == "PASS", document
    events = session_events(started)
    assert events["create"] == 2 and events["destroy"] == 2, events
    # environment: mkdir; oracle: its shell, solve.sh; the checkpoint after the invocation and
    # the final snapshot: one stat listing each (nothing changed in between, so no file is
    # read again); scoring: mkdir, the evaluator
    assert events["exec_create"] == 7, events
    # the oracle's solution/; the evaluator's files in one archive
    assert events["extract-to-dir"] == 2, events
    runtimes = list(bundles_dir(_isolated_cache).glob("evaluator-python-*/lib/python3.*"))
    assert len(runtimes) == 1
    for name in ("typing", "pathlib", "json/__init__"):
        folder, _, module = name.rpartition("/")
        cache = runtimes[0] / folder / "__pycache__"
        assert list(cache.glob(f"{module}.cpython-*.pyc")), name
    assert {"typing", "pathlib", "json"} <= set(runner_imports())


def test_a_removal_in_the_background_is_waited_for(docker_engine: object) -> None:
    container = AttemptContainer.start(
        ContainerSpec(image="ageval/base:bookworm", name_hint="background-removal")
    )
    assert find_container(container.id) is not None
    container.remove_later()
    wait_for_removals()
    assert find_container(container.id) is None
