"""Two machines sharing a cache through a real S3 server (moto's, on loopback).

A "machine" is a cache directory and a copy of the dataset; between them the Docker images
machine A built (task images, the runs' committed images) are removed, so machine B has
none of them.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agevalx.cache.remote.s3server import CREDENTIALS, LocalS3Server
from agevalx.cache.remote.store import RemoteStore
from agevalx.cache.store import CacheStore
from agevalx.cli import main
from agevalx.environments.container import SESSION
from agevalx.environments.engine import client
from agevalx.images.build import reference_of
from tests.integration.engine_events import EVENTS

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
RUNCASES = ROOT / "tests/integration/data/runcases"
TASK = "echo-pass"
JOB = ("--task", TASK, "--task", "three-steps", "-k", "2")
"""A k=2 job of two tasks: the oracle's and a scripted agent's (which takes checkpoints)."""
FORMATS = ("json", "markdown", "csv", "html", "table")
SCORING_CONTAINERS = ("ageval-eval-", "ageval-evaluator-")
"""Name prefixes of the containers evaluation starts (every other one is an attempt's)."""
_buckets = itertools.count()


@pytest.fixture(scope="module")
def s3_server() -> Iterator[LocalS3Server]:
    with LocalS3Server() as server:
        yield server


@pytest.fixture
def bucket(s3_server: LocalS3Server, monkeypatch: pytest.MonkeyPatch) -> str:
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    return s3_server.create_bucket(f"machines-{os.getpid()}-{next(_buckets)}")


def salt_images(dataset: Path, salt: str) -> None:
    """Give the dataset's task and scoring images keys (and tags) no other test's share, so
    that removing them (`_remove_images`) takes nothing from a test running beside this one."""
    for dockerfile in sorted(dataset.glob("tasks/*/environment/Dockerfile")):
        dockerfile.write_text(dockerfile.read_text() + f"# salt {salt}\n")


class Machine:
    """A cache directory and a dataset copy: what one host holds. The machines of one test
    (under one directory) hold the same dataset, salted for that test (`salt_images`)."""

    def __init__(self, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.cache = root / "cache"
        self.dataset = root / "dataset"
        self.capsys = capsys
        shutil.copytree(RUNCASES, self.dataset, ignore=shutil.ignore_patterns(".ageval"))
        salt_images(self.dataset, hashlib.sha256(str(root.parent).encode()).hexdigest()[:16])

    def ageval(self, *args: str, cache: bool = True) -> tuple[int, dict[str, Any]]:
        self.capsys.readouterr()
        code = main([*args, *(("--cache-dir", str(self.cache)) if cache else ()), "--json"])
        out = self.capsys.readouterr().out
        return code, json.loads(out)

    def report(self, *remote: str, form: str = "markdown") -> bytes:
        out = self.dataset.parent / f"report.{form}"
        code, _ = self.ageval(
            "report", str(self.dataset), "-f", form, "-o", str(out), *remote, cache=bool(remote)
        )
        assert code == 0
        return out.read_bytes()


def _add_remote(machine: Machine, server: LocalS3Server, url: str, name: str = "shared") -> None:
    code, _ = machine.ageval(
        "cache", "remote", "add", name, url, "-o", f"endpoint_url={server.endpoint_url}"
    )
    assert code == 0


def _remove_images(cache: Path) -> int:
    """Remove every image machine A's cache names (task images, committed run images); not
    their untagged parents, which are build cache layers that builds beside this test use."""
    removed = 0
    with CacheStore(cache) as store:
        for action in (store.get_action(a.kind, a.key) for a in store.entries()):
            if action is None:
                continue
            names = []
            if action.kind in ("image", "scoring_image"):
                names.append(reference_of(store, action))
            if "committed_image" in action.meta:
                names.append(str(action.meta["committed_image"]))
            for name in names:
                if name.startswith("ageval/base"):
                    continue
                try:
                    client().images.remove(name, force=True, noprune=True)
                    removed += 1
                except Exception:  # already gone (two entries name it)
                    pass
    return removed


def _containers_since(started: float) -> list[str]:
    """Names of the containers this process created since `started`."""
    return EVENTS.created(started, "ageval.session", SESSION)


def _outcomes(document: dict[str, Any], kind: str) -> list[str]:
    return [item["outcome"] for item in document["nodes"] if item["kind"] == kind]


def _agent_containers_since(started: float) -> int:
    """Attempt containers (where agents run) this process created since `started`."""
    names = _containers_since(started)
    return sum(1 for name in names if not name.startswith(SCORING_CONTAINERS))


def test_b_pulls_a_job_renders_its_report_and_rescores_without_the_agent(
    docker_engine, s3_server, bucket, tmp_path, capsys
):
    a, b = Machine(tmp_path / "a", capsys), Machine(tmp_path / "b", capsys)
    _add_remote(a, s3_server, bucket)
    code, ran = a.ageval("run", str(a.dataset), *JOB, "--remote", "shared")
    assert code == 0, ran
    stats = ran["remote"]
    with CacheStore(a.cache) as store, RemoteStore(bucket, options=s3_server.options) as remote:
        local, uploaded = set(store.entries()), set(remote.entries())
    # Every node, and the checkpoints taken while the runs went on, went up as it was stored.
    assert local == uploaded and any(action.kind == "checkpoint" for action in local)
    assert stats["uploads"] >= len(ran["nodes"]) and stats["write_errors"] == 0
    assert stats["hits"] == 0 and stats["misses"] > 0
    assert ran["summary"]["k"] == 2

    # Write-through already uploaded everything: a push of the dataset moves nothing.
    code, pushed = a.ageval("cache", "push", str(a.dataset), "--remote", "shared")
    assert code == 0, pushed
    assert pushed["entries_copied"] == 0 and pushed["objects_copied"] == 0
    assert pushed["jobs"] == [ran["summary"]["job_id"]]
    report_a = a.report()
    leaderboard_a = {form: a.report("--remote", "shared", form=form) for form in FORMATS}
    assert _remove_images(a.cache) >= 2

    # A fresh machine renders the leaderboard from the remote alone: no container, no path.
    fresh = Machine(tmp_path / "fresh", capsys)
    _add_remote(fresh, s3_server, bucket)
    started = time.time()
    leaderboard = {form: fresh.report("--remote", "shared", form=form) for form in FORMATS}
    assert _containers_since(started) == []
    assert leaderboard == leaderboard_a
    document = json.loads(leaderboard["json"])
    assert str(tmp_path) not in leaderboard["json"].decode()
    assert document["provenance"]["datasets"][0]["id"] == ran["dataset"]
    assert sum(row["metrics"]["n"] for row in document["overall"]) == 4
    assert all(row["pass_rate_stderr"] is not None for row in document["tasks"])
    assert not (fresh.dataset / ".ageval").exists()

    _add_remote(b, s3_server, bucket)
    code, pulled = b.ageval("cache", "pull", str(b.dataset), "--remote", "shared")
    assert code == 0, pulled
    assert pulled["entries_copied"] > 0 and len(pulled["views"]) == 4
    assert b.report() == report_a
    code, again = b.ageval("cache", "pull", str(b.dataset), "--remote", "shared")
    assert (again["entries_copied"], again["objects_copied"]) == (0, 0)

    evaluator = b.dataset / "tasks" / TASK / "evaluator.py"
    evaluator.write_text(evaluator.read_text().replace('"PASS" if ok', '"FAIL" if ok'))
    started = time.time()
    code, rescored = b.ageval("run", str(b.dataset), *JOB, "--remote", "shared")
    assert code == 0, rescored
    assert _outcomes(rescored, "run") == ["reused"] * 4
    assert sorted(_outcomes(rescored, "evaluate")) == ["computed"] * 2 + ["reused"] * 2
    assert _agent_containers_since(started) == 0
    statuses = {(r["task_id"], r["status"]) for r in rescored["results"]}
    assert statuses == {(TASK, "FAIL"), ("three-steps", "PASS")}
    assert rescored["remote"]["write_errors"] == 0 and rescored["remote"]["uploads"] >= 3


def test_a_corrupted_remote_result_is_detected_and_recomputed(
    docker_engine, s3_server, bucket, tmp_path, capsys
):
    import s3fs

    a, b = Machine(tmp_path / "a", capsys), Machine(tmp_path / "b", capsys)
    _add_remote(a, s3_server, bucket)
    code, ran = a.ageval("run", str(a.dataset), "--task", TASK, "--remote", "shared")
    assert code == 0, ran
    evaluate_key = next(n["key"] for n in ran["nodes"] if n["kind"] == "evaluate")
    with CacheStore(a.cache) as store:
        action = store.get_action("evaluate", evaluate_key)
        assert action is not None
        blob = action.outputs["result"].digest
    fs = s3fs.S3FileSystem(endpoint_url=s3_server.endpoint_url, skip_instance_cache=True)
    fs.pipe_file(f"{bucket[5:]}/objects/xxh3-128/{blob[:2]}/{blob[2:]}", b"rotten")

    _add_remote(b, s3_server, bucket)
    code, rescored = b.ageval("run", str(b.dataset), "--task", TASK, "--remote", "shared")
    assert code == 0, rescored
    assert _outcomes(rescored, "run") == ["reused"]
    assert _outcomes(rescored, "evaluate") == ["computed"]
    codes = [w["code"] for w in rescored["remote"]["warnings"]]
    assert "remote_entry_unusable" in codes
    assert rescored["results"][0]["status"] == "PASS"


def _dead_endpoint() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_a_dead_remote_leaves_the_run_green_with_a_warning(
    docker_engine, tmp_path, capsys, monkeypatch
):
    a = Machine(tmp_path / "a", capsys)
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    code, _ = a.ageval(
        *("cache", "remote", "add", "dead", "s3://nowhere/cache"),
        *("-o", f"endpoint_url={_dead_endpoint()}"),
    )
    assert code == 0
    code, ran = a.ageval("run", str(a.dataset), "--task", TASK, "--remote", "dead")
    assert code == 0, ran
    assert ran["results"][0]["status"] == "PASS"
    assert [w["code"] for w in ran["remote"]["warnings"]] == ["remote_unavailable"]
    assert ran["remote"]["write_errors"] > 0 and ran["remote"]["uploads"] == 0


def test_b_forks_from_the_checkpoints_of_an_attempt_a_kept(
    docker_engine, s3_server, bucket, tmp_path, capsys
):
    a, b = Machine(tmp_path / "a", capsys), Machine(tmp_path / "b", capsys)
    _add_remote(a, s3_server, bucket)
    code, ran = a.ageval(
        "run",
        str(a.dataset),
        "--task",
        "three-steps",
        "--keep-recovery-state",
        "--remote",
        "shared",
    )
    assert code == 0, ran
    attempt = ran["results"][0]["attempt_id"]
    _remove_images(a.cache)

    _add_remote(b, s3_server, bucket)
    code, pulled = b.ageval("cache", "pull", str(b.dataset), "--job", attempt, "--remote", "shared")
    assert code == 0 and pulled["views"] == [attempt], pulled
    code, listing = b.ageval("checkpoints", str(b.dataset), "--run", attempt, cache=False)
    assert code == 0 and [p["step"] for p in listing["checkpoints"]] == [0, 1, 2]
    second = listing["checkpoints"][1]
    code, forked = b.ageval(
        "run",
        str(b.dataset),
        "--task",
        "three-steps",
        "--fork",
        attempt,
        "--checkpoint",
        str(second["seq"]),
        "--model",
        "mock-model-2",
    )
    assert code == 0, forked
    child = forked["results"][0]
    assert child["status"] == "PASS"
    assert child["forked_from"] == {"attempt_id": attempt, "checkpoint": second["key"]}
