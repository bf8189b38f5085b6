"""Jobs between two caches through a file:// remote: records, job refs, views, leaderboards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agevalx.cache import CacheStore
from agevalx.cache.backend import ObjectId
from agevalx.cache.layered import LayeredStore
from agevalx.cache.layout import object_path
from agevalx.cache.manifest import ActionManifest, OutputRef
from agevalx.cache.remote import RemoteStore
from agevalx.operations.share import (
    find_jobs,
    job_ref,
    local_jobs,
    pull_jobs,
    push_jobs,
    record_job,
    refile_job,
)
from agevalx.reports import build_report
from agevalx.reports.leaderboard import leaderboard, report_bytes
from agevalx.results.metrics import overall_metrics, task_metrics
from agevalx.results.models import AttemptResult, JobSummary
from tests.unit.reports.builders import make_result

pytestmark = pytest.mark.unit

DATASET = "acme/demo"


def _job(k: int = 2, failing: int = 0) -> tuple[list[AttemptResult], JobSummary]:
    results = [
        make_result(task, n, "FAIL" if (task, n) == ("beta", failing) else "PASS")
        for task in ("alpha", "beta")
        for n in range(k)
    ]
    tasks = {
        task: task_metrics(
            [r.status for r in results if r.task_id == task], [None] * k, [None] * k, k
        )
        for task in ("alpha", "beta")
    }
    summary = JobSummary(
        job_id=f"demo-job-{failing}",
        dataset_id=DATASET,
        k=k,
        tasks=tasks,
        overall=overall_metrics(list(tasks.values())),
        attempts=[{"task": r.task_id, "attempt_id": r.attempt_id} for r in results],
        summary_key=f"{failing:032x}",
    )
    return results, summary


def test_a_job_is_indexed_locally_but_is_no_gc_root(store: CacheStore) -> None:
    results, summary = _job()
    filed = record_job(store, results, summary, [], "1.0")
    assert filed is not None and filed.ref == job_ref(summary.job_id)
    assert local_jobs(store)[filed.ref] == tuple(sorted(filed.targets))
    assert filed.targets[0] == filed.record and store.has_blob(filed.record)
    assert store.list_refs() == {}  # local gc keeps its own policy


def test_a_job_filed_again_unchanged_is_only_checked(store: CacheStore) -> None:
    results, summary = _job()
    filed = record_job(store, results, summary, [], "1.0")
    assert filed is not None
    index = store.root / "jobs" / filed.ref
    before = index.stat().st_mtime_ns
    assert refile_job(store, filed)
    assert index.stat().st_mtime_ns == before  # nothing written


def test_a_job_whose_ref_or_record_changed_is_not_filed_again_unchecked(
    store: CacheStore,
) -> None:
    results, summary = _job()
    filed = record_job(store, results, summary, [], "1.0")
    assert filed is not None
    # another record of the same job id took the ref since
    other_results, other_summary = _job(failing=1)
    other_summary.job_id = summary.job_id
    assert record_job(store, other_results, other_summary, [], "1.0") is not None
    assert not refile_job(store, filed)
    # the ref names it again, but its record's blob is gone
    assert record_job(store, results, summary, [], "1.0") == filed
    assert refile_job(store, filed)
    object_path(store.root, filed.record).unlink()
    assert not refile_job(store, filed)
    # a ref name that is no ref name, a record that is no blob of the ref
    assert not refile_job(store, filed._replace(ref="../escape"))
    entry = next(target for target in filed.targets if "/" in target)
    assert not refile_job(store, filed._replace(record=entry))


def test_b_pulls_a_jobs_records_and_writes_the_views_a_report_reads(
    store: CacheStore, file_remote: RemoteStore, tmp_path: Path
) -> None:
    results, summary = _job()
    record_job(store, results, summary, [], "1.0")
    pushed = push_jobs(store, file_remote, dataset_id=DATASET)
    assert pushed.jobs == [summary.job_id] and job_ref(summary.job_id) in file_remote.list_refs()
    dataset = tmp_path / "b-dataset"
    with CacheStore(tmp_path / "b") as other:
        shared = pull_jobs(other, file_remote, dataset=dataset, dataset_id=DATASET)
        assert sorted(shared.views) == sorted(r.attempt_id for r in results)
        assert job_ref(summary.job_id) in local_jobs(other)
    pulled = json.loads(
        (dataset / ".ageval/suite-runs" / summary.job_id / "summary.json").read_text()
    )
    assert pulled["summary_key"] == summary.summary_key
    report = build_report(dataset)
    assert sum(row.metrics.n for row in report.overall) == 4
    with pytest.raises(Exception, match="holds no job"):
        pull_jobs(CacheStore(tmp_path / "c"), file_remote, dataset_id="someone/else")


def test_pushing_the_same_jobs_again_asks_the_remote_one_thing(
    store: CacheStore, file_remote: RemoteStore
) -> None:
    """The remote's GENERATION: the entries, objects, job records and refs were all written
    under it by this cache's last push."""
    results, summary = _job()
    record_job(store, results, summary, [], "1.0")
    first = push_jobs(store, file_remote, dataset_id=DATASET)
    assert not first.transfer.remembered and job_ref(summary.job_id) in file_remote.list_refs()
    before = file_remote.requests
    again = push_jobs(store, file_remote, dataset_id=DATASET)
    assert file_remote.requests - before == 1
    assert again.transfer.remembered and again.transfer.objects_copied == 0
    assert again.jobs == [summary.job_id]
    # another job: its record and ref are new, so the remote is asked again
    results, summary = _job(failing=1)
    record_job(store, results, summary, [], "1.0")
    third = push_jobs(store, file_remote, dataset_id=DATASET)
    assert not third.transfer.remembered
    assert job_ref(summary.job_id) in file_remote.list_refs()


def test_pulling_a_pulled_job_again_asks_the_remote_for_its_refs_alone(
    store: CacheStore, file_remote: RemoteStore, tmp_path: Path
) -> None:
    """The record is read from the local cache that holds it: the listing of refs/ and the
    read of the job's ref are the whole conversation."""
    results, summary = _job()
    nodes = {(node.kind, node.key) for result in results for node in result.nodes}
    for kind, key in nodes | {("summary", summary.summary_key)}:
        blob = store.put_bytes(key.encode())
        store.put_action(
            ActionManifest.create(kind, key, {"out": OutputRef(digest=blob, type="blob")})
        )
    record_job(store, results, summary, [], "1.0")
    push_jobs(store, file_remote, dataset_id=DATASET)
    with CacheStore(tmp_path / "b") as other:
        first = pull_jobs(other, file_remote, dataset_id=DATASET)
        assert first.jobs == [summary.job_id] and first.transfer.entries_copied > 0
        before = file_remote.requests
        again = pull_jobs(other, file_remote, dataset_id=DATASET)
        assert again.jobs == [summary.job_id] and again.transfer.ok
        assert (again.transfer.entries_copied, again.transfer.objects_copied) == (0, 0)
        assert file_remote.requests - before == 2
        # a local record that no longer verifies is read from the remote instead
        [digest] = [t for t in file_remote.list_refs()[job_ref(summary.job_id)] if "/" not in t]
        local = other.root / "objects/xxh3-128" / digest[:2] / digest[2:]
        local.chmod(0o644)
        local.write_bytes(b"rotten")
        before = file_remote.requests
        mended = pull_jobs(other, file_remote, dataset_id=DATASET)
        assert mended.jobs == [summary.job_id] and not mended.problems
        assert file_remote.requests - before == 3


def test_a_corrupt_job_record_is_reported_and_the_other_jobs_still_move(
    store: CacheStore, file_remote: RemoteStore, tmp_path: Path
) -> None:
    for failing in (0, 1):
        results, summary = _job(failing=failing)
        record_job(store, results, summary, [], "1.0")
    push_jobs(store, file_remote, dataset_id=DATASET)
    [digest] = [t for t in file_remote.list_refs()[job_ref("demo-job-0")] if "/" not in t]
    path = Path(file_remote.base) / "objects/xxh3-128" / digest[:2] / digest[2:]
    path.write_bytes(b"rotten")
    with CacheStore(tmp_path / "b") as other:
        shared = pull_jobs(other, file_remote, dataset_id=DATASET)
        assert shared.jobs == ["demo-job-1"]
        assert len(shared.problems) == 1 and "does not match" in shared.problems[0]
        assert other.missing_objects([ObjectId("blob", digest)]) is not False


def test_the_leaderboard_node_is_the_same_bytes_on_two_machines_and_reused(
    store: CacheStore, file_remote: RemoteStore, tmp_path: Path
) -> None:
    results, summary = _job()
    with LayeredStore(tmp_path / "a", file_remote) as a:
        record_job(a, results, summary, [], "1.0")
        records = [found.record for found in find_jobs(a, local_jobs(a))[0]]
        first, key, reused = leaderboard(a, records)
        assert not reused and first.provenance is not None
        assert first.provenance.datasets[0].version == "1.0"
    with LayeredStore(tmp_path / "b", RemoteStore(file_remote.url)) as b:
        again, same_key, reused = leaderboard(b, records)
        assert reused and same_key == key  # read through from the remote
        assert report_bytes(again) == report_bytes(first)
    changed, _ = _job(failing=1)
    record = records[0].model_copy(update={"results": changed})
    with CacheStore(tmp_path / "c") as c:
        other, other_key, _ = leaderboard(c, [record])
        assert other_key != key and report_bytes(other) != report_bytes(first)


def test_a_job_filed_again_unchanged_writes_nothing(tmp_path: Path) -> None:
    """A no-op run files the same record: its index file is left as it is (the command memo
    keeps only runs that write nothing)."""
    store = CacheStore(tmp_path / "cache")
    results, summary = _job()
    first = record_job(store, results, summary, [])
    assert first is not None
    index = store.root / "jobs" / first.ref
    before = index.stat()
    again = record_job(store, results, summary, [])
    after = index.stat()
    assert again == first
    assert (after.st_ino, after.st_mtime_ns, after.st_ctime_ns) == (
        before.st_ino,
        before.st_mtime_ns,
        before.st_ctime_ns,
    )
    more = record_job(store, results, summary, ["a" * 32])
    assert more is not None and more.targets != first.targets
    assert store.root.joinpath("jobs", first.ref).stat().st_ino != before.st_ino
