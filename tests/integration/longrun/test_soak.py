"""The soak test: a job of real pi attempts survives every fault a long run meets.

`ageval run SOAK -k 3 --retry-infra 2` (a subprocess, as a user runs it) on the generated soak
dataset (`agevalx.testing.soak`: each task's prompt names a command, the mock model has pi
run it, a seeded third of the tasks is designed to FAIL) against the scripted mock model,
served per conversation. The faulty job meets:

- in the mock: a stalled stream (cut by the profile's 3 s `model.watchdog`), a burst of 429s
  and a run of 503s, each with Retry-After 1;
- from outside: `docker kill` of an attempt container while its agent runs, `docker rm -f`
  of a scoring container while it runs, and `kill -9` of ageval twice, the same command run
  again after each.

A fault-free job of the same seeded dataset runs at the same time, beside it (each job is
one ageval process with a mock and a cache of its own; their attempts differ, since their
profiles name different mocks). The tests then prove what issue 26
asks: every attempt ends exactly once; no attempt's status is changed by the faults; every
fault is an infrastructure retry; pass@k equals the fault-free job's; nothing is left on the
engine; the gateway's concurrency fell on the 429s and recovered.

CI size: 10 tasks x k=3 (`AGEVAL_SOAK_TASKS` overrides the number of tasks); the full size
(100 tasks) is benchmarks/bench_longrun.py.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from agevalx.agents.mockllm import MockLLM
from agevalx.testing.soak import (
    SCRIPT,
    SoakJob,
    SoakOutcome,
    default_faults,
    dump,
    left_behind,
    summary_statuses,
    write_soak_dataset,
)
from tests.integration.agents.catalog.harness import bundles_dir, ensure_built

TASKS = int(os.environ.get("AGEVAL_SOAK_TASKS", "10"))
K = 3
INFRASTRUCTURE = "infrastructure"


pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.serial,  # 60 real pi attempts and their faults: timed alone, not beside others
]


class Soak:
    """The two jobs of this module and the mock of the faulty one."""

    def __init__(self, clean: SoakOutcome, faulty: SoakOutcome, mock: Any) -> None:
        self.clean = clean
        self.faulty = faulty
        self.mock = mock


def _job(root: Path, mock: Any, salt: str, faults: list[dict[str, Any]] | None = None) -> SoakJob:
    dataset = write_soak_dataset(root / "dataset", TASKS, base_url=mock.url, salt=salt)
    return SoakJob(
        dataset,
        mock,
        k=K,
        cache_dir=root / "cache",
        bundles_dir=bundles_dir(),
        late_faults=faults or (),
    )


@pytest.fixture(scope="module")
def soak(tmp_path_factory: pytest.TempPathFactory, docker_engine: object) -> Iterator[Soak]:
    ensure_built("pi")
    salt = uuid.uuid4().hex
    faults = default_faults(TASKS * K)
    with (
        MockLLM(SCRIPT, per_conversation=True) as clean_mock,
        MockLLM(SCRIPT, per_conversation=True) as mock,
        ThreadPoolExecutor(max_workers=1) as beside,
    ):
        clean_job = _job(tmp_path_factory.mktemp("soak-clean"), clean_mock, salt)
        job = _job(tmp_path_factory.mktemp("soak-faulty"), mock, salt, faults)
        clean_run = beside.submit(clean_job.run)
        faulty = job.run_with_faults()
        yield Soak(clean_run.result(), faulty, mock)


def _tries(outcome: SoakOutcome) -> list[dict[str, Any]]:
    """Every earlier try recorded in the job's result.json files, with its attempt id."""
    found = []
    for attempt, result in outcome.stored_results().items():
        for record in (result or {}).get("tries") or []:
            found.append({**record, "attempt_id": attempt})
    return found


def test_the_fault_free_job_scores_as_designed(soak: Soak) -> None:
    clean = soak.clean
    assert clean.exit_code == 0, dump(clean.document)[:4000]
    designed = {task: [status] * K for task, status in clean.dataset.designed().items()}
    assert summary_statuses(clean.results) == designed
    assert not _tries(clean), "a fault-free job retried something"


def test_every_attempt_ends_exactly_once(soak: Soak) -> None:
    faulty = soak.faulty
    assert [fault.kind for fault in faulty.faults].count("ageval_killed") == 2, faulty.faults
    assert len(faulty.pids) == 3
    ids = [result["attempt_id"] for result in faulty.results]
    assert len(ids) == faulty.attempts and len(set(ids)) == faulty.attempts, ids
    summary = faulty.summary()
    listed = [(row["task_id"], row["attempt"]) for row in summary["attempts"]]
    expected = {(task.task_id, n) for task in faulty.dataset.tasks for n in range(K)}
    assert len(listed) == faulty.attempts and set(listed) == expected
    stored = faulty.stored_results()
    assert set(stored) == set(ids), "an attempt was started afresh instead of continued"
    for attempt, result in stored.items():
        assert result is not None and result["attempt_id"] == attempt, attempt
    hit = {fault.attempt_id for fault in faulty.faults if fault.attempt_id}
    assert len(hit) == 2 and hit <= set(ids), faulty.faults


def test_no_status_is_changed_by_the_faults(soak: Soak) -> None:
    faulty = soak.faulty
    statuses = summary_statuses(faulty.results)
    errors = [r for r in faulty.results if r["status"] == "ERROR"]
    assert not errors, dump(errors)[:4000]
    assert statuses == summary_statuses(soak.clean.results)
    assert faulty.exit_code == 0


def test_every_injected_fault_is_an_infrastructure_retry(soak: Soak) -> None:
    faulty = soak.faulty
    tries = _tries(faulty)
    assert all(record["class"] == INFRASTRUCTURE for record in tries), dump(tries)
    by_attempt: dict[str, set[str]] = {}
    for record in tries:
        by_attempt.setdefault(record["attempt_id"], set()).add(record["code"])
    codes = {"container_killed": "environment_lost", "scoring_removed": "scoring_environment_lost"}
    for fault in faulty.faults:
        if fault.kind in codes:
            assert fault.attempt_id is not None
            assert codes[fault.kind] in by_attempt.get(fault.attempt_id, set()), dump(tries)
    served = soak.mock.faults_served
    stalls = [record for record in tries if record["code"] == "model_stream_broken"]
    assert served.get("stall", 0) >= 1 and len(stalls) == served["stall"], dump(tries)
    held = served.get("429", 0) + served.get("503", 0)
    summary = faulty.summary()
    assert served.get("429", 0) >= 1 and served.get("503", 0) >= 1, served
    # Every refused request was held and sent again by the gateway (a retry, never the
    # agent's failure); a try that ended meanwhile (its container lost) takes its count with
    # it: an attempt has one request in flight, so at most one per earlier try.
    assert summary["usage"]["retries"] >= held - len(tries), (summary["usage"], served, tries)


def test_pass_at_k_equals_the_fault_free_job(soak: Soak) -> None:
    clean, faulty = soak.clean.summary(), soak.faulty.summary()
    assert faulty["overall"]["pass_at_k"] == clean["overall"]["pass_at_k"]
    assert clean["overall"]["pass_at_k"] == soak.clean.dataset.designed_pass_at(K)
    for task, metrics in clean["tasks"].items():
        assert faulty["tasks"][task]["pass_at_k"] == metrics["pass_at_k"], task
        assert faulty["tasks"][task].get("infrastructure", 0) == 0, faulty["tasks"][task]


def test_nothing_is_left_on_the_engine(soak: Soak) -> None:
    for outcome in (soak.clean, soak.faulty):
        ids = [result["attempt_id"] for result in outcome.results]
        assert left_behind(outcome.pids, ids) == {"containers": [], "networks": []}


def test_gateway_concurrency_fell_on_429s_and_recovered(soak: Soak) -> None:
    figures = soak.faulty.summary()["run"]["gateway"]
    throttled = [figure for figure in figures if figure["throttled"]]
    assert sum(f["throttled"] for f in figures) == soak.mock.faults_served["429"], dump(figures)
    (figure,) = throttled
    limits = [limit for _, limit in figure["curve"]]
    fell = next((i for i in range(1, len(limits)) if limits[i] < limits[i - 1]), None)
    assert fell is not None, f"the limit never fell: {limits}"
    lowest = min(limits[fell:])
    assert max(limits[limits.index(lowest, fell) :]) > lowest, f"never recovered: {limits}"
    assert figure["final"] > lowest and figure["peak"] >= max(limits), dump(figure)
