"""Removing a session's containers when some go away meanwhile: a cluster worker on this
machine (which joined the driver's session) or a background removal takes them at the same
moment. That is not an error: the job must not end in `internal_error` over it."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from agevalx.environments import container as module
from agevalx.environments.engine import LABEL, client
from tests.integration.conftest import BASE_IMAGE

pytestmark = pytest.mark.integration


def test_a_container_removed_between_listing_and_removal_is_not_an_error(
    docker_engine: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = f"removal-{uuid.uuid4().hex[:8]}"
    label = f"{LABEL}.session={session}"
    engine = client().api
    created = [
        engine.create_container(BASE_IMAGE, command="true", labels={f"{LABEL}.session": session})
        for _ in range(3)
    ]
    listing = engine.containers

    def listed_then_one_goes(*args: Any, **kwargs: Any) -> Any:
        found = listing(*args, **kwargs)
        engine.remove_container(created[0]["Id"], force=True)  # another process got there first
        return found

    try:
        monkeypatch.setattr(module, "SESSION", session)
        monkeypatch.setattr(engine, "containers", listed_then_one_goes)
        assert module.remove_session_containers() == 3
        monkeypatch.undo()
        assert listing(all=True, filters={"label": label}) == []
    finally:
        for item in listing(all=True, filters={"label": label}):
            engine.remove_container(item["Id"], force=True)
