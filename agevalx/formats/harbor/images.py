"""An image's WORKDIR: where a Harbor task's commands run when the task sets no workdir.

Images of Harbor tasks are image nodes like any task's (agevalx/images/build.py): a task
without `docker_image` builds environment/Dockerfile, as `harbor run` does, offline.
"""

from __future__ import annotations


def image_workdir(reference: str) -> str | None:
    """The image's configured WORKDIR (`None` when it sets none)."""
    # The Docker SDK is imported here, not with the package: planning a Harbor dataset
    # (`import agevalx.formats.harbor`) needs no engine.
    import docker

    from agevalx.environments.engine import client

    try:
        attributes = client().images.get(reference).attrs
    except docker.errors.ImageNotFound:
        return None
    workdir = (attributes.get("Config") or {}).get("WorkingDir") or ""
    return str(workdir) or None
