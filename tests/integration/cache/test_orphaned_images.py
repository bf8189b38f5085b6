"""`ageval cache gc` lists this cache's images that no entry names; `--images` removes them."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any

import docker
import pytest
import yaml

from agevalx.cache.location import default_cache_dir
from agevalx.cache.scan import iter_action_files
from agevalx.cache.store import CacheStore
from agevalx.cli import main
from agevalx.environments.engine import client

pytestmark = [pytest.mark.integration, pytest.mark.serial]

RUNCASES = Path(__file__).resolve().parents[2] / "integration/data/runcases"
TASK = "echo-pass"


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code = main([*args, "--json"])
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert code == 0, document
    return document


def committed_images() -> list[str]:
    """The run entries' committed image ids, oldest first."""
    with CacheStore(default_cache_dir()) as store:
        runs = [a.manifest for a in iter_action_files(store, "run") if a.manifest is not None]
    return [str(m.meta["committed_image_id"]) for m in sorted(runs, key=lambda m: m.created)]


def present(image_id: str) -> bool:
    try:
        client().images.get(image_id)
    except docker.errors.ImageNotFound:
        return False
    return True


def test_gc_lists_then_removes_orphaned_images_and_keeps_referenced_ones(
    copy_dataset, tmp_path, capsys
) -> None:
    copy_dataset(RUNCASES)  # checks the engine and the base image
    dataset = tmp_path / "images"
    shutil.copytree(RUNCASES, dataset, ignore=shutil.ignore_patterns(".ageval"))
    task_file = dataset / "tasks" / TASK / "task.yaml"
    document = yaml.safe_load(task_file.read_text())
    document["parameters"]["salt"] = uuid.uuid4().hex  # attempt ids of this test alone
    task_file.write_text(yaml.safe_dump(document))
    foreign = client().containers.run(
        "ageval/base:bookworm", ["true"], detach=True, labels={"ageval": "attempt"}
    )
    foreign.wait()
    tag = f"gc-{uuid.uuid4().hex[:12]}"
    other_cache = foreign.commit(
        repository="ageval/run", tag=tag, conf={"Labels": {"ageval.cache": str(tmp_path / "x")}}
    )
    # An image made for an earlier cache at this same path (removed, then made again).
    same_path = foreign.commit(
        repository="ageval/run",
        tag=f"{tag}-earlier",
        conf={
            "Labels": {
                "ageval": "attempt",
                "ageval.cache": str(default_cache_dir().resolve()),
                "ageval.cache.instance": "0" * 32,
            }
        },
    )
    foreign.remove(force=True)
    try:
        for extra in ((), ("--fresh",)):
            run = cli(capsys, "run", str(dataset), "--task", TASK, *extra)
            assert run["results"][0]["status"] == "PASS", run
        old, new = committed_images()
        with CacheStore(default_cache_dir()) as store:
            [image] = [a.manifest for a in iter_action_files(store, "image") if a.manifest]
        environment = str(image.meta["image_id"])

        listed = cli(capsys, "cache", "gc", "--keep-newest", "1")
        assert [found["id"] for found in listed["images"]["orphaned"]] == [old]
        assert listed["images"]["removed"] == [] and present(old)

        removed = cli(capsys, "cache", "gc", "--images")
        assert [found["id"] for found in removed["images"]["removed"]] == [old]
        assert not present(old)
        assert present(new) and present(environment) and present(str(other_cache.id))
        assert present(str(same_path.id))

        assert main(["cache", "gc", "--images"]) == 0
        assert "removed 0 orphaned images" in capsys.readouterr().out
    finally:
        client().images.remove(str(other_cache.id), force=True)
        client().images.remove(str(same_path.id), force=True)
