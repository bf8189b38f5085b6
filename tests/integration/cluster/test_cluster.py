"""`ageval run --cluster` on a real Ray cluster of this machine, with a real S3 remote.

The cluster is the one docs/scale-out.md's walk-through starts (a head and two workers with
`docker: 1` each, on loopback addresses), started once for the module from the page's own
`ray start` lines, each node a process tree of its own (ports and temp directory of this test
only) ended in teardown. The remote is moto's S3 server on 127.0.0.1. The tests run in file
order: the last one kills a worker.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agevalx.cache.remote.s3server import CREDENTIALS, LocalS3Server
from agevalx.cache.store import CacheStore
from agevalx.cli import main
from agevalx.cluster.dispatch import SERVER_FAILURE
from agevalx.environments.container import SESSION
from agevalx.environments.engine import client
from agevalx.environments.owners import OWNER_PID, reap_orphans
from agevalx.testing.raycluster import LocalRayCluster, free_ports
from tests.integration.runcases import runcases_job
from tests.interrupt import sigint_at_default

pytestmark = [pytest.mark.integration, pytest.mark.serial]

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs/scale-out.md"
TASKS = {"echo-pass": "echo-pass", "three-steps": "three-steps"}
COPIES = {"echo-again": "echo-pass", "steps-again": "three-steps"}
"""The job's four tasks: two of the oracle (PASS), two of a scripted agent with checkpoints."""


def walk_lines() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("<!-- walk -->", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


class Walk:
    """The documented walk, with the test's port, bucket, endpoint and directories."""

    def __init__(self, root: Path, server: LocalS3Server, bucket: str, port: int) -> None:
        self.root, self.server, self.bucket, self.port = root, server, bucket, port

    def local(self, line: str) -> list[str]:
        text = line.replace("6380", str(self.port)).replace("s3://evals/cache", self.bucket)
        text = text.replace("http://127.0.0.1:9000", self.server.endpoint_url)
        text = text.replace("/tmp/", f"{self.root}/")
        text = text.replace("examples/datasets/", f"{self.root}/datasets/")
        return shlex.split(text)


@pytest.fixture(scope="module")
def s3_server() -> Iterator[LocalS3Server]:
    with LocalS3Server() as server:
        yield server


@pytest.fixture(scope="module")
def walk(tmp_path_factory: pytest.TempPathFactory, s3_server: LocalS3Server) -> Walk:
    root = tmp_path_factory.mktemp("walk")
    shutil.copytree(
        ROOT / "examples/datasets/text-tools",
        root / "datasets/text-tools",
        ignore=shutil.ignore_patterns(".ageval"),
    )
    bucket = s3_server.create_bucket(f"cluster-{os.getpid()}")
    return Walk(root, s3_server, bucket, free_ports(1)[0])


@pytest.fixture(scope="module")
def cluster(walk: Walk, docker_engine: object) -> Iterator[LocalRayCluster]:
    """The walk-through's `ray start` lines, as processes of this test."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in CREDENTIALS.items():
            patch.setenv(name, value)
        started = LocalRayCluster({})
        try:
            for index, line in enumerate(walk_lines()):
                words = walk.local(line)
                env = {}
                while "=" in words[0] and not words[0].startswith("-"):
                    name, _, value = words.pop(0).partition("=")
                    env[name] = value
                if words[:2] == ["ray", "start"]:
                    node = "head" if "--head" in words else f"worker-{index}"
                    started.add_node(node, words[2:], env)
            started.settle()
            assert started.port == walk.port and len(started.nodes) == 3
            yield started
        finally:
            started.stop()
            reap_orphans()  # what the killed worker's processes left in Docker


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("AGEVAL_REMOTE", raising=False)


def ageval(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main([*args, "--json"])
    out = capsys.readouterr().out
    os.environ.pop("RAY_ADDRESS", None)  # ray.init may leave it behind
    return code, json.loads(out)


def job_dataset(target: Path, more: dict[str, str] | None = None) -> Path:
    """The job's four tasks (two copies under other ids), and `more` copies (id: source)."""
    return runcases_job(target, {**TASKS, **COPIES, **(more or {})})


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return job_dataset(tmp_path_factory.mktemp("job") / "dataset")


def remote_args(walk: Walk, cache: Path, name: str = "shared") -> list[str]:
    return ["--remote", name, "--cache-dir", str(cache)]


def add_remote(capsys: pytest.CaptureFixture[str], walk: Walk, cache: Path) -> None:
    code, _ = ageval(
        capsys,
        "cache", "remote", "add", "shared", walk.bucket,
        "-o", f"endpoint_url={walk.server.endpoint_url}", "--cache-dir", str(cache),
    )  # fmt: skip
    assert code == 0


def failures(document: dict[str, Any]) -> str:
    """What went wrong, for an assertion's message: every error whole, and the traceback of
    an internal error (its crash report, which the hint names)."""
    errors = [item["error"] for item in document.get("nodes", []) if "error" in item]
    errors += [document["error"]] if "error" in document else []
    lines = [json.dumps(error, sort_keys=True) for error in errors]
    for error in errors:
        report = re.search(r"traceback is in (\S+) ", error.get("hint") or "")
        if report and Path(report.group(1)).is_file():
            lines.append(Path(report.group(1)).read_text(errors="replace"))
    return "\n".join(lines) or "no error reported"


def by_attempt(document: dict[str, Any]) -> dict[tuple[str, int], tuple[str, Any]]:
    return {(r["task_id"], r["attempt"]): (r["status"], r["score"]) for r in document["results"]}


def test_the_documented_walk_runs_a_job_on_the_cluster_then_reuses_it(
    cluster: LocalRayCluster, walk: Walk, capsys: pytest.CaptureFixture[str]
) -> None:
    documents = []
    for line in walk_lines():
        words = walk.local(line)
        if words[0] != "ageval":
            continue
        code, document = ageval(capsys, *words[1:])
        assert code == 0, failures(document)
        documents.append(document)
    first, again = documents[-2], documents[-1]
    assert len(first["results"]) == 4 and first["counts"]["computed"] > 0
    assert {item["ran_on"] for item in first["nodes"] if item["kind"] == "run"}
    assert again["counts"]["computed"] == 0, again["counts"]
    assert by_attempt(again) == by_attempt(first)


def test_a_k2_job_of_four_tasks_spreads_over_the_workers_as_a_local_run_scores_it(
    cluster: LocalRayCluster,
    walk: Walk,
    job: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    driver = walk.root / "job-driver"
    add_remote(capsys, walk, driver)
    # The same job run locally, in a cache of its own, is what the cluster's must equal: it
    # runs beside the cluster's (an ageval process of its own), which mostly waits on Ray.
    local_copy = job_dataset(tmp_path / "local")
    argv = ["run", str(local_copy), "-k", "2", "--cache-dir", str(tmp_path), "--json"]
    local_run = subprocess.Popen(
        [str(Path(sys.executable).with_name("ageval")), *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        code, clustered = ageval(
            capsys, "run", str(job), "-k", "2", *remote_args(walk, driver),
            "--cluster", cluster.address,
        )  # fmt: skip
    finally:
        out, err = local_run.communicate(timeout=900)
    assert code == 0, failures(clustered)
    runs = [item for item in clustered["nodes"] if item["kind"] == "run"]
    assert len(runs) == 8 and {item["outcome"] for item in runs} == {"computed"}
    docker_nodes = [item for item in clustered["nodes"] if item["kind"] in ("run", "evaluate")]
    assert all("ran_on" in item for item in docker_nodes)
    assert len({item["ran_on"] for item in docker_nodes}) >= 2, "one worker ran everything"
    assert not any("ran_on" in item for item in clustered["nodes"] if item["kind"] == "lock")

    assert local_run.returncode == 0, err[-4000:] or out[-4000:]
    local = json.loads(out)
    assert by_attempt(clustered) == by_attempt(local)
    assert {v[0] for v in by_attempt(local).values()} == {"PASS"}
    keys = {i["id"]: i["key"] for i in clustered["nodes"]}
    assert keys == {i["id"]: i["key"] for i in local["nodes"]}
    assert scratch_left(walk) == []


def test_a_rerun_on_the_cluster_computes_nothing_and_a_local_run_of_its_entries_is_identical(
    cluster: LocalRayCluster,
    walk: Walk,
    job: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    driver = walk.root / "job-driver"  # the previous test's driver, whose job is on the remote
    code, again = ageval(
        capsys, "run", str(job), "-k", "2", *remote_args(walk, driver), "--cluster", cluster.address
    )
    assert code == 0, failures(again)
    assert again["counts"]["computed"] == 0, again["counts"]
    assert not any("ran_on" in item for item in again["nodes"])

    # Another machine's local run over the same entries (pulled from the remote, no cluster).
    other = tmp_path / "other-cache"
    add_remote(capsys, walk, other)
    elsewhere = job_dataset(tmp_path / "other")
    code, local = ageval(capsys, "run", str(elsewhere), "-k", "2", *remote_args(walk, other))
    assert code == 0, failures(local)
    assert local["counts"]["computed"] == 0
    summary = Path(again["summary_path"]).read_bytes()
    assert Path(local["summary_path"]).read_bytes() == summary
    reports = []
    for dataset, cache in ((job, driver), (elsewhere, other)):
        out = tmp_path / f"report-{cache.name}.md"
        code, _ = ageval(
            capsys, "report", str(dataset), "-f", "markdown", "-o", str(out),
            "--cache-dir", str(cache),
        )  # fmt: skip
        assert code == 0
        reports.append(out.read_bytes())
    assert reports[0] == reports[1] and b"echo-again" in reports[0]


def test_cluster_without_a_remote_is_a_coded_usage_error(
    cluster: LocalRayCluster, job: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, document = ageval(
        capsys, "run", str(job), "--cache-dir", str(tmp_path), "--cluster", cluster.address
    )
    assert code == 2
    assert document["error"]["code"] == "cluster_needs_remote"
    assert "--remote" in document["error"]["hint"]


def test_a_harbor_dataset_with_an_outside_profiles_file_runs_on_workers_without_a_checkout(
    cluster: LocalRayCluster, walk: Walk, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Harbor demo with `--profiles` from outside the dataset (the scripted agent): the
    workers get the task files from the remote's tree and the profile from the lock."""
    dataset = tmp_path / "harbor-demo"
    shutil.copytree(ROOT / "examples/datasets/harbor-demo", dataset)
    profiles = tmp_path / "elsewhere" / "scripted.yaml"
    profiles.parent.mkdir()
    shutil.copy(ROOT / "examples/profiles/scripted.yaml", profiles)
    driver = tmp_path / "driver"
    add_remote(capsys, walk, driver)
    code, document = ageval(
        capsys, "run", str(dataset), "--profiles", str(profiles),
        "--task", "hello", "--task", "partial",
        *remote_args(walk, driver), "--cluster", cluster.address,
    )  # fmt: skip
    assert code == 0, failures(document)
    found = {r["task_id"]: (r["status"], r["score"]) for r in document["results"]}
    assert found == {"hello": ("PASS", 1.0), "partial": ("DONE", 0.5)}  # as locally
    docker_nodes = [item for item in document["nodes"] if item["kind"] in ("run", "evaluate")]
    assert len(docker_nodes) == 4 and all(item.get("ran_on") for item in docker_nodes)
    restored = list(walk.root.glob("worker-*/ageval-checkouts/*/hello/task.toml"))
    assert restored, "no worker restored the Harbor dataset's tree"
    assert scratch_left(walk) == []


def scratch_left(walk: Walk) -> list[Path]:
    """The attempts' journal directories the workers left in their checkouts (the outputs are
    in the cache; a checkout keeps only the dataset's files)."""
    return list(walk.root.glob("worker-*/ageval-checkouts/*/.ageval/runs/*"))


def test_a_ray_client_address_runs_a_job_through_the_heads_client_server(
    cluster: LocalRayCluster, walk: Walk, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = job_dataset(tmp_path / "dataset")
    driver = tmp_path / "driver"
    add_remote(capsys, walk, driver)
    assert cluster.client_address.startswith("ray://127.0.0.2:")
    code, document = ageval(
        capsys, "run", str(dataset), "--task", "echo-pass", "--task", "three-steps", "--fresh",
        *remote_args(walk, driver), "--cluster", cluster.client_address,
    )  # fmt: skip
    if code != 0 and SERVER_FAILURE in document.get("error", {}).get("message", ""):
        # Ray's own: the head's client server for this driver died as it started, twice (a
        # fork under gRPC load: docs/scale-out.md; the suite's head runs without gRPC's fork
        # handlers, which stopped it in the runs since); anything else fails the test.
        pytest.xfail(f"Ray's client server did not start: {cluster.client_server_logs()}")
    assert code == 0, f"{failures(document)}\n{cluster.client_server_logs()}"
    runs = [item for item in document["nodes"] if item["kind"] in ("run", "evaluate")]
    assert runs and {item["outcome"] for item in runs} == {"computed"}
    assert all(item.get("ran_on") for item in runs)
    assert {v[0] for v in by_attempt(document).values()} == {"PASS"}
    assert len(document["results"]) == 2


def test_an_attempt_kept_on_the_cluster_is_forked_on_the_cluster_from_its_checkpoint(
    cluster: LocalRayCluster, walk: Walk, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The source's checkpoints are stored by a worker (on the remote); the fork's run node
    restores one on whichever worker runs it, and the driver lists and records the lineage."""
    dataset = job_dataset(tmp_path / "dataset", {"steps-to-fork": "three-steps"})
    driver = tmp_path / "driver"
    add_remote(capsys, walk, driver)
    clustered = [*remote_args(walk, driver), "--cluster", cluster.address]
    code, ran = ageval(
        capsys, "run", str(dataset), "--task", "steps-to-fork", "--keep-recovery-state",
        *clustered,
    )  # fmt: skip
    assert code == 0, failures(ran)
    first = next(i for i in ran["nodes"] if i["kind"] == "run")
    assert first["outcome"] == "computed" and first.get("ran_on"), json.dumps(ran["nodes"])
    source = ran["results"][0]["attempt_id"]
    code, listing = ageval(capsys, "checkpoints", str(dataset), "--run", source)
    assert code == 0 and [p["step"] for p in listing["checkpoints"]] == [0, 1, 2], listing
    second = listing["checkpoints"][1]
    code, forked = ageval(
        capsys, "run", str(dataset), "--task", "steps-to-fork", "--fork", source,
        "--checkpoint", str(second["seq"]), "--model", "mock-model-2", *clustered,
    )  # fmt: skip
    assert code == 0, failures(forked)
    child = forked["results"][0]
    assert child["status"] == "PASS" and child["attempt_id"] != source
    assert child["forked_from"] == {"attempt_id": source, "checkpoint": second["key"]}
    run = next(item for item in forked["nodes"] if item["kind"] == "run")
    assert run["outcome"] == "computed" and run.get("ran_on")
    written = json.loads(
        (dataset / ".ageval/runs" / child["attempt_id"] / "result.json").read_text()
    )
    assert written["forked_from"] == child["forked_from"]
    assert scratch_left(walk) == []


def _attempt_owner_pids() -> set[int]:
    found = client().api.containers(filters={"label": f"ageval.session={SESSION}"})
    return {int(c["Labels"][OWNER_PID]) for c in found if c["Labels"].get(OWNER_PID, "").isdigit()}


def _worker_containers(cluster: LocalRayCluster) -> list[str]:
    """Containers owned by a process of a worker node (whatever the session)."""
    pids: set[int] = set()
    for name in cluster.nodes:
        if name != "head":
            pids |= cluster.pids(name)
    found = client().api.containers(all=True, filters={"label": OWNER_PID})
    return [c["Id"] for c in found if int(c["Labels"][OWNER_PID] or 0) in pids]


def test_ctrl_c_removes_every_worker_container_exits_130_and_keeps_finished_nodes(
    cluster: LocalRayCluster, walk: Walk, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = job_dataset(tmp_path / "dataset")
    driver = tmp_path / "driver"
    add_remote(capsys, walk, driver)
    command = [
        str(Path(sys.executable).parent / "ageval"), "run", str(dataset), "-k", "2", "--fresh",
        "--task", "echo-pass", "--task", "echo-again",
        *remote_args(walk, driver), "--cluster", cluster.address, "--json",
    ]  # fmt: skip
    running = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=sigint_at_default
    )
    deadline = time.monotonic() + 300
    while not _worker_containers(cluster):
        assert running.poll() is None and time.monotonic() < deadline, "no attempt started"
        time.sleep(0.2)
    time.sleep(1.0)
    running.send_signal(signal.SIGINT)
    _, err = running.communicate(timeout=120)
    assert running.returncode == 130, err.decode(errors="replace")[-2000:]
    assert _worker_containers(cluster) == []
    with CacheStore(driver) as store:
        kept = {action.kind for action in store.entries()}
    assert "lock" in kept and "image" in kept  # finished nodes stay in the cache


def test_killing_a_worker_mid_job_retries_its_attempt_once_elsewhere(
    cluster: LocalRayCluster,
    walk: Walk,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    dataset = job_dataset(tmp_path / "dataset")
    driver = tmp_path / "driver"
    add_remote(capsys, walk, driver)
    victim = next(name for name in cluster.nodes if name != "head")
    outcome: dict[str, Any] = {}

    def run() -> None:
        code = main(
            [
                "run", str(dataset), "--task", "three-steps", "--task", "steps-again", "-k", "2",
                "--fresh",
                *remote_args(walk, driver), "--cluster", cluster.address, "--json",
            ]
        )  # fmt: skip
        outcome["code"] = code

    capsys.readouterr()
    driving = threading.Thread(target=run)
    driving.start()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and driving.is_alive():
        if _attempt_owner_pids() & cluster.pids(victim):
            break  # an attempt's container belongs to the victim's worker process
        time.sleep(0.2)
    else:
        pytest.fail("no attempt ran on the victim worker")
    cluster.kill(victim)
    driving.join(timeout=600)
    assert not driving.is_alive()
    document = json.loads(capsys.readouterr().out)
    os.environ.pop("RAY_ADDRESS", None)
    assert outcome["code"] == 0, failures(document)
    attempts = [(r["task_id"], r["attempt"]) for r in document["results"]]
    assert sorted(attempts) == sorted(set(attempts)) and len(attempts) == 4
    retried = [item for item in document["nodes"] if "retried" in item]
    assert len(retried) >= 1
    assert all(item["retried"].startswith("infrastructure: ") for item in retried)
    assert all(item["outcome"] == "computed" for item in retried)
    names = {item["id"] for item in retried}
    for result in document["results"]:
        for node in result["nodes"]:
            assert ("retried" in node) == (node["id"] in names)
            result_file = next((dataset / ".ageval/runs").glob(f"{result['attempt_id']}"))
            written = json.loads((result_file / "result.json").read_text())
            assert written["nodes"] == result["nodes"]
    assert {status for status, _ in by_attempt(document).values()} == {"PASS"}
