"""The oracle's shell is asked of one container per image, not of every attempt's."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from agevalx.agents.acp.sandbox import LaunchRequest, LocalSandbox
from agevalx.agents.base import Container

pytestmark = pytest.mark.unit


class Asking(LocalSandbox):
    """Counts the processes it starts."""

    def __init__(self, container: Container) -> None:
        super().__init__(container)
        self.started = 0

    async def start(
        self, request: LaunchRequest, *, limit: int = 2**16
    ) -> asyncio.subprocess.Process:
        self.started += 1
        return await super().start(request, limit=limit)


def _shell(tmp_path: Path, image: str | None) -> tuple[str, int]:
    sandbox = Asking(Container(id="local", workdir=str(tmp_path), image=image))
    return asyncio.run(sandbox.shell(image)), sandbox.started


def test_the_shell_is_asked_once_per_image(tmp_path: Path) -> None:
    image = f"ageval/env:{uuid.uuid4().hex}"
    first, asked = _shell(tmp_path, image)
    assert first in {"bash", "sh"} and asked == 1
    assert _shell(tmp_path, image) == (first, 0)
    assert _shell(tmp_path, f"ageval/env:{uuid.uuid4().hex}")[1] == 1


def test_a_container_of_an_unknown_image_is_asked_each_time(tmp_path: Path) -> None:
    assert _shell(tmp_path, None)[1] == 1
    assert _shell(tmp_path, None)[1] == 1
