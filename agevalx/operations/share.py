"""Jobs that travel between machines: a job's ref, push and pull of a dataset or a job, and
the `.ageval/` views a pull writes.

Every `ageval run` files a **job record** (the attempts' result.json documents and the job
summary, as one canonical JSON blob) and a job ref `job.<digest of the job id>` naming the
record and every node entry the job's results name (locks, images, runs, checkpoints,
evaluations, the summary). Locally the job refs are an index under `<cache>/jobs/`, not gc
roots (local gc keeps its own policy); on a remote they are refs, so remote gc keeps every
job pushed. A push or pull of a `DATASET` or `--job ID` moves what they name that the other
side lacks. A pull then writes
the dataset's views from the record and the pulled entries, so `ageval report DATASET`
works on the pulling machine as on the machine that ran the jobs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

from pydantic import ValidationError

from agevalx.cache.atomic import write_atomic
from agevalx.cache.backend import ObjectId
from agevalx.cache.errors import CacheError
from agevalx.cache.layered import LayeredStore
from agevalx.cache.layout import REF_NAME_RE, check_ref_name
from agevalx.cache.manifest import ActionManifest, RefFile
from agevalx.cache.store import CacheStore
from agevalx.errors import UsageError
from agevalx.fsutil import atomic_write, holds
from agevalx.hashing import digest_json
from agevalx.operations.views import (
    activity_cut_points,
    write_attempt_views,
    write_checkpoint_index,
)
from agevalx.results.models import AttemptResult, JobSummary
from agevalx.results.paths import attempt_dir, suite_dir
from agevalx.results.records import FINISHED, JobRecord

if TYPE_CHECKING:
    from agevalx.cache.remote.store import RemoteStore
    from agevalx.cache.transfer import TransferProgress, TransferReport
    from agevalx.reports.models import Report

JOB_REF_PREFIX = "job."
JOBS_DIR = "jobs"
"""`<cache>/jobs/`: the local index of job refs (not gc roots)."""


class FiledJob(NamedTuple):
    """A job's ref as `record_job` filed it."""

    ref: str
    """The ref's name (`job_ref`)."""
    record: str
    """The digest of the job record's blob."""
    targets: tuple[str, ...]
    """What the ref names: the record's blob, then the node entries."""


def job_ref(job_id: str) -> str:
    """The ref naming a job (job ids may hold characters a ref name may not)."""
    return JOB_REF_PREFIX + digest_json(["job", job_id])


def record_job(
    store: CacheStore,
    results: list[AttemptResult],
    summary: JobSummary | None,
    checkpoints: list[str],
    dataset_version: str | None = None,
) -> FiledJob | None:
    """File the record and the ref of a run's job (None without results)."""
    if not results:
        return None
    record = JobRecord(
        job_id=summary.job_id if summary is not None else results[0].attempt_id,
        dataset_id=results[0].dataset_id,
        results=results,
        summary=summary.model_dump(mode="json") if summary is not None else None,
        checkpoints=sorted(set(checkpoints)),
        dataset_version=dataset_version,
    )
    name = job_ref(record.job_id)
    with store.in_use():
        digest = store.put_bytes(record.canonical_bytes())
        targets = [digest, *(str(action) for action in record.roots())]
        index_job(store, name, targets)
    if isinstance(store, LayeredStore):
        store.publish_ref(name, targets)
    return FiledJob(name, digest, tuple(targets))


def refile_job(store: CacheStore, filed: FiledJob) -> bool:
    """File again a job `record_job` filed, whose record is known to be the same (a no-op run
    whose views the stamp vouched for, see `operations.viewstamp`), without making the record
    again: True when the local index names exactly its targets and the record's blob is
    stored (a remote then gets the ref again); False when it must be filed anew."""
    try:
        index = store.root / JOBS_DIR / check_ref_name(filed.ref)
        stored = RefFile.model_validate_json(index.read_bytes()).targets
        if stored != tuple(sorted(set(filed.targets))) or filed.record not in stored:
            return False
        if not store.has_blob(filed.record):  # a malformed digest raises CacheError
            return False
    except (OSError, ValidationError, CacheError):
        return False
    if isinstance(store, LayeredStore):
        store.publish_ref(filed.ref, filed.targets)
    return True


def index_job(store: CacheStore, name: str, targets: list[str]) -> None:
    """Record a job ref in the local index (`<cache>/jobs/<name>`); one that already holds
    these targets is left as it is (a no-op run writes nothing)."""
    data = RefFile(targets=tuple(sorted(set(targets)))).canonical_bytes()
    path = store.root / JOBS_DIR / check_ref_name(name)
    if not holds(path, data):
        write_atomic(store.tmp, path, data)


def local_jobs(store: CacheStore) -> dict[str, tuple[str, ...]]:
    """The local index of job refs (malformed files are left out)."""
    found: dict[str, tuple[str, ...]] = {}
    directory = store.root / JOBS_DIR
    for path in sorted(directory.iterdir()) if directory.is_dir() else []:
        if not REF_NAME_RE.fullmatch(path.name):
            continue
        try:
            found[path.name] = RefFile.model_validate_json(path.read_bytes()).targets
        except (OSError, ValidationError):
            continue
    return found


@dataclass
class Job:
    """A job found through its ref: the record and the ref's targets."""

    ref: str
    record: JobRecord
    digest: str
    data: bytes
    """The record's bytes, as stored (verified against `digest`)."""


@dataclass
class ShareReport:
    """What a push or pull of jobs did."""

    jobs: list[str]
    transfer: TransferReport
    views: list[str] = field(default_factory=list)
    """Attempt ids whose views were written (pull into a dataset)."""
    problems: list[str] = field(default_factory=list)
    """Job refs that could not be read (a missing or corrupt record)."""


class RecordReader(Protocol):
    """Where job records are read from: a cache, or a local cache before a remote."""

    def read_object(self, obj: ObjectId) -> bytes: ...


def find_jobs(
    backend: RecordReader,
    refs: dict[str, tuple[str, ...]],
    *,
    dataset_id: str | None = None,
    job_id: str | None = None,
) -> tuple[list[Job], list[str]]:
    """The jobs of `refs` (of one dataset, or the one job asked), and the refs that failed."""
    names = sorted(name for name in refs if name.startswith(JOB_REF_PREFIX))
    if job_id is not None:
        names = [name for name in names if name == job_ref(job_id)]
    jobs, problems = [], []
    for name in names:
        digests = [target for target in refs[name] if "/" not in target]
        try:
            if len(digests) != 1:
                raise CacheError("job_record_invalid", f"ref {name} names no single job record")
            data = backend.read_object(ObjectId("blob", digests[0]))
            record = JobRecord.model_validate_json(data)
        except (CacheError, ValidationError) as exc:
            message = exc.message if isinstance(exc, CacheError) else str(exc).splitlines()[0]
            problems.append(f"{name}: {message}")
            continue
        if dataset_id is None or record.dataset_id == dataset_id:
            jobs.append(Job(ref=name, record=record, digest=digests[0], data=data))
    return jobs, problems


def push_jobs(
    store: CacheStore,
    remote: RemoteStore,
    *,
    dataset_id: str | None = None,
    job_id: str | None = None,
    progress: TransferProgress | None = None,
) -> ShareReport:
    """Upload the jobs' records, entries and objects that the remote lacks, then their refs."""
    from agevalx.cache.transfer import push  # the transfer: only a push or pull needs it

    refs = local_jobs(store)
    jobs, problems = find_jobs(store, refs, dataset_id=dataset_id, job_id=job_id)
    _require_some(jobs, dataset_id, job_id, "this cache")
    remote.require_writable()

    def records_and_refs() -> bool:
        """The job records, then their refs (what a puller looks for first) last."""
        for job in jobs:
            obj = ObjectId("blob", job.digest)
            if remote.missing_objects([obj]):
                remote.write_object(obj, job.data)
        if not remote.available:
            return False
        for job in jobs:
            remote.set_ref(job.ref, refs[job.ref])
        return remote.available

    roots = sorted({root for job in jobs for root in job.record.roots()})
    written = [f"job {job.digest} {job.ref} {' '.join(refs[job.ref])}" for job in jobs]
    report = push(store, remote, roots, progress=progress, also=written, finish=records_and_refs)
    return ShareReport(jobs=[job.record.job_id for job in jobs], transfer=report, problems=problems)


def pull_jobs(
    store: CacheStore,
    remote: RemoteStore,
    *,
    dataset: Path | None = None,
    dataset_id: str | None = None,
    job_id: str | None = None,
    progress: TransferProgress | None = None,
) -> ShareReport:
    """Download the jobs' records, entries and objects this cache lacks, keep their refs, and
    (given the dataset directory) write the dataset's `.ageval/` views of them."""
    from agevalx.cache.transfer import pull

    refs = remote.list_refs()
    jobs, problems = find_jobs(
        _HeldFirst(store, remote), refs, dataset_id=dataset_id, job_id=job_id
    )
    _require_some(jobs, dataset_id, job_id, f"remote {remote.location}")
    with store.in_use():
        for job in jobs:
            store.write_object(ObjectId("blob", job.digest), job.data)
        roots = sorted({root for job in jobs for root in job.record.roots()})
        report = pull(store, remote, roots, progress=progress)
        for job in jobs:
            index_job(store, job.ref, list(refs[job.ref]))
    written: list[str] = []
    if dataset is not None:
        for job in jobs:
            written += write_job_views(dataset, store, job.record)
    return ShareReport(
        jobs=[job.record.job_id for job in jobs], transfer=report, views=written, problems=problems
    )


@dataclass
class _HeldFirst:
    """Reads a job record from the local cache when it holds it (verified against its digest
    there as everywhere), else from the remote: a job pulled before asks the remote for its
    refs alone (a no-op pull is the refs' listing and their reads)."""

    store: CacheStore
    remote: RemoteStore

    def read_object(self, obj: ObjectId) -> bytes:
        if not self.store.missing_objects([obj]):
            try:
                return self.store.read_object(obj)
            except CacheError:  # a local copy that no longer verifies: the remote's is read
                pass
        return self.remote.read_object(obj)


def write_job_views(dataset: Path, store: CacheStore, record: JobRecord) -> list[str]:
    """Write `.ageval/runs/<attempt>/` (result.json, activity and transcript, artifacts,
    checkpoint index) and `.ageval/suite-runs/<job>/summary.json` from the cache."""
    written = []
    for result in record.results:
        run_ref = next((n for n in result.nodes if n.kind == "run" and n.outcome in FINISHED), None)
        run = store.get_action("run", run_ref.key) if run_ref is not None else None
        eval_ref = next(
            (n for n in result.nodes if n.kind == "evaluate" and n.outcome in FINISHED), None
        )
        evaluation = store.get_action("evaluate", eval_ref.key) if eval_ref is not None else None
        write_attempt_views(dataset, store, result, run, evaluation=evaluation)
        if run is not None and _checkpoints_present(store, record, run):
            write_checkpoint_index(attempt_dir(dataset, result.attempt_id), store, run)
        written.append(result.attempt_id)
    if record.summary is not None:
        path = suite_dir(dataset, record.job_id) / "summary.json"
        summary = JobSummary.model_validate(record.summary)
        atomic_write(path, summary.model_dump_json(indent=2).encode() + b"\n")
    return written


def checkpoint_keys(store: CacheStore, run: ActionManifest | None) -> list[str]:
    """The keys of the checkpoint nodes a run's activity records (its cut points)."""
    if run is None or "activity" not in run.outputs:
        return []
    activity = store.get_bytes(run.outputs["activity"].digest)
    return [point.key for point in activity_cut_points(activity)]


def _checkpoints_present(store: CacheStore, record: JobRecord, run: ActionManifest) -> bool:
    """Whether the run kept checkpoints that the record names and this cache holds."""
    if not record.checkpoints:
        return False
    try:
        keys = checkpoint_keys(store, run)
    except (ValueError, CacheError):  # an activity that does not parse keeps no cut point
        return False
    held = all(store.get_action("checkpoint", key) for key in keys)
    return bool(keys) and set(keys) <= set(record.checkpoints) and held


def dataset_id_of(dataset: Path) -> str:
    """The id of the dataset in a directory (ageval.yaml, or Harbor tasks)."""
    from agevalx.formats import open_dataset
    from agevalx.lockfile import BindingRequest

    return open_dataset(dataset, BindingRequest()).dataset_id


def _require_some(jobs: list[Job], dataset_id: str | None, job_id: str | None, where: str) -> None:
    if jobs:
        return
    what = f"job {job_id!r}" if job_id else f"dataset {dataset_id!r}" if dataset_id else "any"
    raise UsageError(
        "job_not_found",
        f"{where} holds no job of {what}" if job_id is None else f"{where} holds no {what}",
        field="--job" if job_id else "DATASET",
        hint="every ageval run records its job; push it from the machine that ran it",
    )


def remote_leaderboard(
    store: LayeredStore, dataset: Path, job_id: str | None = None
) -> tuple[Report, str, bool]:
    """The leaderboard of a dataset's jobs (or of one job) on the remote `store` reads
    through: made from their records alone, starting no container. Returns the report, the
    leaderboard node's key and whether the node was reused (locally or from the remote)."""
    remote = store.remote
    jobs, _ = find_jobs(
        remote, remote.list_refs(), dataset_id=dataset_id_of(dataset), job_id=job_id
    )
    _require_some(jobs, dataset_id_of(dataset), job_id, f"remote {remote.location}")
    from agevalx.reports.leaderboard import leaderboard  # reports: only `ageval report` needs them

    return leaderboard(store, [job.record for job in jobs])
