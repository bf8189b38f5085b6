"""`ageval cache gc` lists this cache's images that no entry names; `--images` removes them."""

from __future__ import annotations

import contextlib
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
from tests.integration.cache.test_two_machines import salt_images

pytestmark = pytest.mark.integration

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
    salt_images(dataset, uuid.uuid4().hex)  # its images' tags too: no other test starts from them
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
    retagged = None
    try:
        run = cli(capsys, "run", str(dataset), "--task", TASK)
        assert run["results"][0]["status"] == "PASS", run
        with CacheStore(default_cache_dir()) as store:
            [image] = [a.manifest for a in iter_action_files(store, "image") if a.manifest]
        environment = str(image.meta["image_id"])
        # Another cache on this engine builds the same task image: the tag moves to its build,
        # so the next run starts from that one, and this cache's build is left untagged with
        # the first run's committed image as its only child. Removing that child must not
        # take the build its entry names along (docker prunes untagged parents by default).
        retagged, _ = client().images.build(
            path=str(dataset / "tasks" / TASK / "environment"),
            tag=str(image.meta["reference"]),
            labels={"ageval.cache": str(tmp_path / "another-cache")},
            rm=True,
        )
        assert retagged.id != environment
        run = cli(capsys, "run", str(dataset), "--task", TASK, "--fresh")
        assert run["results"][0]["status"] == "PASS", run
        old, new = committed_images()

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
        if retagged is not None:
            _remove_with_children(str(retagged.id))


def _remove_with_children(image_id: str) -> None:
    """Remove an image after the images made from it (docker refuses a parent first)."""
    for image in client().api.images(all=True):
        if image.get("ParentId") == image_id:
            _remove_with_children(str(image["Id"]))
    with contextlib.suppress(docker.errors.NotFound):  # pruned with its last child
        client().images.remove(image_id, force=True)
