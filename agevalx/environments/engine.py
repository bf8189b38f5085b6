"""Access to the Docker engine through the Docker SDK, with coded errors."""

from __future__ import annotations

import contextlib
from functools import cache
from typing import Any

import docker
from docker.errors import DockerException

from agevalx.errors import AgevalError

LABEL = "ageval"
"""Every container and image ageval creates carries this label (value: what it is)."""


class EnvironmentFailure(AgevalError):
    """The environment (Docker, images, containers) failed; the attempt is ERROR."""


@cache
def client() -> Any:
    """The Docker client for `DOCKER_HOST` or the default socket."""
    try:
        engine = docker.from_env(timeout=300)
        engine.ping()
    except DockerException as exc:
        raise EnvironmentFailure(
            "docker_unavailable",
            f"cannot reach the Docker engine: {exc}",
            hint="start one with: bash scripts/setup-docker.sh (as root)",
        ) from None
    return engine


def image_exists(reference: str) -> bool:
    try:
        client().images.get(reference)
    except docker.errors.ImageNotFound:
        return False
    except (DockerException, OSError) as exc:
        raise EnvironmentFailure("docker_unavailable", f"the Docker engine failed: {exc}") from None
    return True


def remove_image(reference: str) -> None:
    """Remove an image ageval made; a missing one is fine."""
    with contextlib.suppress(DockerException, OSError):
        client().images.remove(reference, force=True)
