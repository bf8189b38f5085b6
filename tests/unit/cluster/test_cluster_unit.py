"""The cluster's parts that need no Ray cluster: refusals, Ray kept out of plain imports, the
dataset tree through a file:// remote, and the retried mark of result.json."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agevalx.cache.backend import ObjectId
from agevalx.cache.errors import CacheError
from agevalx.cache.remote.store import RemoteStore
from agevalx.cache.store import CacheStore
from agevalx.cluster.checkout import checkout, publish_checkout
from agevalx.cluster.dispatch import SERVER_FAILURE, _init, _joining, _unreachable_hint, connected
from agevalx.errors import UsageError
from agevalx.hashing import digest_bytes
from agevalx.results.models import NodeRef

pytestmark = pytest.mark.unit


def test_importing_the_cli_and_the_run_operation_imports_no_ray() -> None:
    probe = (
        "import sys, agevalx.cli.app, agevalx.operations.run, agevalx.cluster;"
        "print('ray' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_a_cluster_without_a_remote_is_refused_before_ray_is_touched(tmp_path: Path) -> None:
    with (
        CacheStore(tmp_path) as store,
        pytest.raises(UsageError) as raised,
        connected("127.0.0.2:6380", store),
    ):
        pass
    assert raised.value.code == "cluster_needs_remote"
    assert raised.value.field == "--cluster" and "--remote" in (raised.value.hint or "")


class _FailingRay:
    """`ray` whose `init` fails as a head's dead client server makes it fail."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def init(self, **options: object) -> None:
        self.calls.append("init")
        raise ConnectionError(f"ray client connection failed: {SERVER_FAILURE}: startup")

    def shutdown(self) -> None:
        self.calls.append("shutdown")


def test_a_client_server_that_dies_twice_is_unreachable_with_the_fork_hint() -> None:
    ray = _FailingRay()
    with pytest.raises(ConnectionError) as raised:
        _init(ray, "ray://127.0.0.2:10001")
    assert ray.calls == ["init", "shutdown", "init"]
    assert "GRPC_ENABLE_FORK_SUPPORT=0" in _unreachable_hint(str(raised.value))
    other = _unreachable_hint("connection refused")
    assert "GRPC_ENABLE_FORK_SUPPORT" not in other and "ray start --head" in other


def test_a_loopback_head_is_joined_as_its_own_address() -> None:
    assert _joining("127.0.0.2:6380") == {"_node_ip_address": "127.0.0.2"}
    assert _joining("10.0.0.5:6379") == {}
    assert _joining("ray://127.0.0.2:10001") == {}


def test_a_workers_checkout_is_the_drivers_dataset_without_its_results(tmp_path: Path) -> None:
    dataset = tmp_path / "dataset"
    (dataset / "tasks/a").mkdir(parents=True)
    (dataset / "ageval.yaml").write_text("format: ageval.dataset/1\n")
    (dataset / "tasks/a/run.py").write_text("def run(ctx): pass\n")
    (dataset / ".ageval/runs").mkdir(parents=True)
    (dataset / ".ageval/runs/result.json").write_text("{}")
    remote_dir = tmp_path / "remote"
    remote_dir.mkdir()
    with CacheStore(tmp_path / "driver") as driver, RemoteStore(f"file://{remote_dir}") as remote:
        digest = publish_checkout(driver, remote, dataset)
        assert publish_checkout(driver, remote, dataset) == digest
        with CacheStore(tmp_path / "worker") as worker:
            restored = checkout(worker, remote, digest, tmp_path / "checkouts")
            assert checkout(worker, remote, digest, tmp_path / "checkouts") == restored
    assert restored == tmp_path / "checkouts" / digest
    assert (restored / "tasks/a/run.py").read_text() == "def run(ctx): pass\n"
    assert (restored / "ageval.yaml").is_file() and not (restored / ".ageval").exists()


def test_result_json_names_a_retry_only_when_there_was_one() -> None:
    plain = NodeRef(id="run:a#0", kind="run", key="k", outcome="computed")
    assert "retried" not in plain.model_dump_json()
    lost = plain.model_copy(update={"retried": "infrastructure: WorkerCrashedError; ran again"})
    assert '"retried":"infrastructure: WorkerCrashedError; ran again"' in lost.model_dump_json()
    assert NodeRef.model_validate_json(lost.model_dump_json()).retried == lost.retried


def test_a_worker_process_opens_its_store_once_per_remote_and_again_after_an_outage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agevalx.cache.remote.config import RemoteConfig
    from agevalx.cluster import worker

    monkeypatch.setattr(worker, "_STORES", {})
    monkeypatch.setenv("AGEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("AGEVAL_CACHE_SIGNING_KEY", raising=False)
    config = RemoteConfig(url=f"file://{tmp_path}/remote")
    first = worker.worker_store(config)
    assert worker.worker_store(config) is first
    assert first.root == (tmp_path / "cache").absolute()
    other = worker.worker_store(RemoteConfig(url=f"file://{tmp_path}/other"))
    assert other is not first and other.remote.url.endswith("/other")
    monkeypatch.setenv("AGEVAL_CACHE_SIGNING_KEY", "k" * 32)
    signed = worker.worker_store(config)
    assert signed is not first and signed.remote.signing_key is not None
    monkeypatch.delenv("AGEVAL_CACHE_SIGNING_KEY")
    first.remote._trip("test: the remote went away")  # a tripped remote is not reused
    assert not first.remote.available
    again = worker.worker_store(config)
    assert again is not first and again.remote.available
    for store in worker._STORES.values():
        store.close()


def test_a_checkout_of_many_files_is_whole_and_a_tampered_blob_restores_nothing(
    tmp_path: Path,
) -> None:
    dataset = tmp_path / "dataset"
    for index in range(60):
        (dataset / f"tasks/t{index}").mkdir(parents=True)
        (dataset / f"tasks/t{index}/data.txt").write_text(f"{index}\n")
    remote_dir = tmp_path / "remote"
    remote_dir.mkdir()
    with CacheStore(tmp_path / "driver") as driver, RemoteStore(f"file://{remote_dir}") as remote:
        digest = publish_checkout(driver, remote, dataset)
        with CacheStore(tmp_path / "worker") as worker:
            restored = checkout(worker, remote, digest, tmp_path / "checkouts")
        assert sorted(p.read_text() for p in restored.glob("tasks/*/data.txt")) == sorted(
            f"{index}\n" for index in range(60)
        )
        tampered = remote_dir / remote._object_path(ObjectId("blob", digest_bytes(b"7\n")))
        assert tampered.read_bytes() == b"7\n"
        tampered.write_bytes(b"8\n")
        with CacheStore(tmp_path / "other") as worker, pytest.raises(CacheError):
            checkout(worker, remote, digest, tmp_path / "other-checkouts")
    assert not (tmp_path / "other-checkouts" / digest).exists()
