"""A bind-mounted bundle never becomes a volume of the committed image, and removing a
container takes the anonymous volumes its image made for it: thousands of attempts leave no
volume behind on the engine."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from agevalx.environments.container import AttemptContainer, ContainerSpec
from agevalx.environments.engine import client
from tests.integration.conftest import BASE_IMAGE

pytestmark = pytest.mark.integration


def _anonymous_volumes(container: AttemptContainer) -> list[str]:
    mounts = client().api.inspect_container(container.id)["Mounts"]
    return [mount["Name"] for mount in mounts if mount["Type"] == "volume"]


def test_a_commit_of_a_container_with_a_bundle_mounted_declares_no_volume(
    docker_engine: object, tmp_path: Path
) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "marker").write_text("bundle\n")
    spec = ContainerSpec(
        image=BASE_IMAGE,
        name_hint="bundle-mount",
        network="none",
        mounts=((str(bundle), "/opt/ageval/agents/probe"),),
    )
    container = AttemptContainer.start(spec)
    image = ""
    try:
        seen = container.exec("cat /opt/ageval/agents/probe/marker", workdir="/", user="root")
        assert seen.output.strip() == "bundle"
        reference, image = container.commit(f"ageval-test/no-volume-{uuid.uuid4().hex[:8]}")
        assert not client().api.inspect_image(image)["Config"].get("Volumes")
        again = AttemptContainer.start(
            ContainerSpec(image=reference, name_hint="from-commit", network="none")
        )
        try:
            assert _anonymous_volumes(again) == []
        finally:
            again.remove()
    finally:
        container.remove()
        if image:
            client().api.remove_image(image, force=True)


def test_removing_a_container_removes_the_volumes_its_image_declares(
    docker_engine: object,
) -> None:
    api = client().api
    source = api.create_container(BASE_IMAGE, command="true")["Id"]
    declared = api.commit(source, changes=["VOLUME /declared"])["Id"]
    api.remove_container(source, force=True)
    try:
        container = AttemptContainer.start(
            ContainerSpec(image=declared, name_hint="declared-volume", network="none")
        )
        made = _anonymous_volumes(container)
        assert len(made) == 1  # the engine made one for the image's VOLUME
        container.remove()
        left = {volume["Name"] for volume in api.volumes()["Volumes"] or []}
        assert made[0] not in left
    finally:
        for found in api.containers(all=True, filters={"ancestor": declared}):
            api.remove_container(found["Id"], force=True, v=True)
        api.remove_image(declared, force=True)
