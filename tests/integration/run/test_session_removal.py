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


def test_a_container_created_while_ctrl_c_lists_the_session_is_removed_before_it_starts(
    docker_engine: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C lists the session's containers while a worker thread's create is in flight:
    the listing misses it, so the create must see the interrupt itself, or the worker starts
    it and runs its command to the end (the process waits for its threads when it exits)."""
    session = f"interrupt-{uuid.uuid4().hex[:8]}"
    label = f"{LABEL}.session={session}"
    engine = client().api
    monkeypatch.setattr(module, "SESSION", session)
    spec = module.ContainerSpec(image=BASE_IMAGE, name_hint="interrupt", network="none")
    create = engine.create_container
    made: list[str] = []

    def created_after_the_listing(*args: Any, **kwargs: Any) -> Any:
        assert module.interrupt_session() == 0  # the listing: nothing made yet
        found = create(*args, **kwargs)
        made.append(found["Id"])
        return found

    try:
        monkeypatch.setattr(engine, "create_container", created_after_the_listing)
        with pytest.raises(module.EnvironmentFailure) as raised:
            module.AttemptContainer.start(spec)
        assert raised.value.code == "interrupted"
        monkeypatch.setattr(engine, "create_container", create)
        assert len(made) == 1 and engine.containers(all=True, filters={"label": label}) == []
        with pytest.raises(module.EnvironmentFailure):  # still interrupted: nothing starts
            module.AttemptContainer.start(spec)
        module.reopen_session()
        started = module.AttemptContainer.start(spec)
        assert started.running()
        started.remove()
    finally:
        module.reopen_session()
        for item in engine.containers(all=True, filters={"label": label}):
            engine.remove_container(item["Id"], force=True)
