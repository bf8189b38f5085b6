"""The suite's leftover images: `python -m agevalx.testing.images ROOT` removes the images made
for the caches under ROOT (newest first, so a committed image goes before the image it was made
from) and nothing else: not another folder's, not one a container still uses."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from agevalx.environments.engine import client, image_exists
from agevalx.images.build import CACHE_LABEL

pytestmark = pytest.mark.integration

BASE = "ageval/base:bookworm"


class Images:
    """Images this test commits (labelled as ageval labels them), removed at its end."""

    def __init__(self) -> None:
        self.salt = uuid.uuid4().hex[:12]
        self.made: list[str] = []
        self.containers: list[Any] = []

    def commit(self, cache: Path, parent: str = BASE) -> str:
        container = client().containers.create(parent, ["sh", "-c", f"echo {self.salt}"])
        try:
            image = container.commit(
                repository="ageval-test/suite-images",
                tag=f"{self.salt}-{len(self.made)}",
                conf={"Labels": {CACHE_LABEL: str(cache.resolve())}},
            )
        finally:
            container.remove(force=True)
        self.made.append(str(image.id))
        return str(image.id)

    def user(self, image: str) -> Any:
        container = client().containers.create(image, ["true"])
        self.containers.append(container)
        return container


@pytest.fixture
def images(docker_engine: object) -> Iterator[Images]:
    made = Images()
    yield made
    for container in made.containers:
        with contextlib.suppress(docker.errors.NotFound):
            container.remove(force=True)
    for image in reversed(made.made):
        with contextlib.suppress(docker.errors.APIError):
            client().api.remove_image(image, force=True)


def test_removes_the_images_of_caches_under_the_root_and_nothing_else(
    images: Images, tmp_path: Path
) -> None:
    root, other = tmp_path / "suite", tmp_path / "other"
    task = images.commit(root / "gw0" / "cache1")
    attempt = images.commit(root / "gw1" / "cache2", parent=task)  # built on `task`
    used = images.commit(root / "gw1" / "cache3")
    images.user(used)  # a container of it still exists
    elsewhere = images.commit(other / "cache")
    sibling = images.commit(Path(f"{root}-sibling") / "cache")  # a prefix, not a folder under

    finished = subprocess.run(
        [sys.executable, "-m", "agevalx.testing.images", str(root), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert finished.returncode == 0, finished.stderr
    assert json.loads(finished.stdout) == {"found": 3, "removed": 2, "kept": 1}
    assert not image_exists(attempt) and not image_exists(task)
    assert image_exists(used) and image_exists(elsewhere) and image_exists(sibling)


def test_an_unreachable_engine_is_a_coded_error_without_a_traceback(tmp_path: Path) -> None:
    finished = subprocess.run(
        [sys.executable, "-m", "agevalx.testing.images", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock", "PATH": "/usr/bin:/bin"},
    )
    assert finished.returncode == 1
    assert finished.stderr.startswith("docker_unavailable:"), finished.stderr
    assert "Traceback" not in finished.stderr
