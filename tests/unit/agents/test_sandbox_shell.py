"""The oracle's shell is asked of one container per image, not of every attempt's."""

from __future__ import annotations

import asyncio
import threading
import time
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


class Slow(Asking):
    """Answers its probe only once `release` is set."""

    def __init__(self, container: Container, release: threading.Event, fail: bool) -> None:
        super().__init__(container)
        self.release = release
        self.fail = fail

    async def _probe_shell(self) -> str:
        self.started += 1
        while not self.release.is_set():
            await asyncio.sleep(0.01)
        if self.fail:
            raise OSError("the probe's exec failed")
        return "sh"


def _started_at_once(tmp_path: Path, image: str, fail_first: bool) -> list[object]:
    """Three attempts, each on a thread with its own event loop, asking for one image's shell
    while the first one's probe is still running; their answers (or errors) and probes."""
    release = threading.Event()
    sandboxes = [
        Slow(Container(id="local", workdir=str(tmp_path), image=image), release, fail)
        for fail in (fail_first, False, False)
    ]
    answers: list[object] = [None] * 3

    def ask(index: int) -> None:
        try:
            answers[index] = asyncio.run(sandboxes[index].shell(image))
        except OSError as exc:
            answers[index] = exc

    first = threading.Thread(target=ask, args=(0,))
    first.start()
    while sandboxes[0].started == 0:
        time.sleep(0.01)
    others = [threading.Thread(target=ask, args=(index,)) for index in (1, 2)]
    for thread in others:
        thread.start()
    time.sleep(0.1)  # both wait for the first probe (neither started its own)
    waited = [sandbox.started for sandbox in sandboxes]
    release.set()
    for thread in (first, *others):
        thread.join(timeout=10)
    return [answers, waited, [sandbox.started for sandbox in sandboxes]]


def test_attempts_starting_at_once_share_one_probe(tmp_path: Path) -> None:
    answers, waited, probes = _started_at_once(tmp_path, f"ageval/env:{uuid.uuid4().hex}", False)
    assert answers == ["sh", "sh", "sh"]
    assert waited == [1, 0, 0] and probes == [1, 0, 0]


def test_a_failed_probe_lets_each_waiter_ask_its_own_container(tmp_path: Path) -> None:
    image = f"ageval/env:{uuid.uuid4().hex}"
    answers, waited, probes = _started_at_once(tmp_path, image, True)
    assert isinstance(answers[0], OSError) and answers[1:] == ["sh", "sh"]
    assert waited == [1, 0, 0] and probes == [1, 1, 1]
    assert _shell(tmp_path, image)[1] == 1  # and the next attempt asks again
