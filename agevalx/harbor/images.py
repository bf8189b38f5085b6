"""Images of Harbor tasks: building environment/Dockerfile, reading an image's WORKDIR.

Harbor builds a task without `docker_image` from environment/ with `docker compose build`;
ageval does too (beyond the seed, which required a prebuilt image), offline: the base image
must already be on the engine (`pull=False`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import docker

from agevalx.environments.engine import LABEL, EnvironmentFailure, client
from agevalx.harbor import errors
from agevalx.harbor.errors import HarborRunError
from agevalx.harbor.spec import HarborTaskSpec

REPOSITORY = "ageval/harbor"


def _context_digest(context: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(context.rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(context).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:24]


def image_tag(spec: HarborTaskSpec) -> str:
    """A tag naming the build context's content: an unchanged context reuses its image."""
    assert spec.dockerfile is not None
    return f"{REPOSITORY}:{spec.name.lower()[:60]}-{_context_digest(spec.dockerfile.parent)}"


def _image_present(tag: str) -> bool:
    try:
        client().images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return True


def build_task_image(spec: HarborTaskSpec) -> str:
    """The image to start for `spec`: its `image`, or environment/ built (and cached)."""
    if spec.image is not None:
        return spec.image
    if spec.dockerfile is None:
        raise HarborRunError(errors.NO_IMAGE, f"task {spec.name} has no image to start")
    tag = image_tag(spec)
    if _image_present(tag):
        return tag
    try:
        client().images.build(
            path=str(spec.dockerfile.parent),
            dockerfile=spec.dockerfile.name,
            tag=tag,
            rm=True,
            forcerm=True,
            pull=False,
            timeout=int(spec.build_timeout_sec) or None,
            labels={LABEL: "image", f"{LABEL}.harbor-task": spec.name},
        )
    except docker.errors.BuildError as exc:
        log = "".join(str(item.get("stream", item.get("error", ""))) for item in exc.build_log)
        raise HarborRunError(
            errors.IMAGE_BUILD_FAILED,
            f"building {spec.name}'s environment/Dockerfile failed: {exc.msg}",
            file=str(spec.dockerfile),
            hint=log.strip()[-500:] or None,
        ) from None
    except docker.errors.APIError as exc:
        raise EnvironmentFailure(
            "image_build_failed", f"docker refused the build: {exc.explanation}"
        ) from None
    return tag


def image_workdir(reference: str) -> str | None:
    """The image's configured WORKDIR (`None` when it sets none)."""
    try:
        attributes = client().images.get(reference).attrs
    except docker.errors.ImageNotFound:
        return None
    workdir = (attributes.get("Config") or {}).get("WorkingDir") or ""
    return str(workdir) or None
