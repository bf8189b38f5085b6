"""A directory copy cut short by a process still writing in the container is taken again:
frozen when the engine can pause the container, unfrozen when its freezer keeps giving up."""

from __future__ import annotations

import io
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agevalx.environments import container as container_module
from agevalx.environments.container import AttemptContainer
from agevalx.environments.engine import EnvironmentFailure
from tests.unit.environments.freezer import Freezer

pytestmark = pytest.mark.unit


def _archive() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        data = b"kept\n"
        info = tarfile.TarInfo("home/kept.txt")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class _Engine(Freezer):
    """A container whose first `cut` archives are cut short and whose first `refusals`
    pauses fail as runc's freezer does."""

    def __init__(self, cut: int, refusals: int) -> None:
        super().__init__(refusals)
        self.cut = cut

    def get_archive(self, path: str) -> tuple[Iterator[bytes], dict[str, object]]:
        self.calls.append("get-frozen" if self.paused else "get")
        whole = _archive()
        if self.cut > 0:
            self.cut -= 1
            return iter([whole[:700]]), {}
        return iter([whole]), {}


@pytest.fixture(autouse=True)
def _no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "sleep", lambda seconds: None)


def test_a_cut_copy_is_taken_again_frozen(tmp_path: Path) -> None:
    engine = _Engine(cut=1, refusals=0)
    AttemptContainer(engine).get_directory("/attempt/home", tmp_path / "out")
    assert (tmp_path / "out" / "kept.txt").read_bytes() == b"kept\n"
    assert engine.calls == ["get", "pause", "get-frozen", "unpause"]


def test_a_freezer_that_gives_up_once_is_asked_again(tmp_path: Path) -> None:
    engine = _Engine(cut=1, refusals=2)
    AttemptContainer(engine).get_directory("/attempt/home", tmp_path / "out")
    assert (tmp_path / "out" / "kept.txt").read_bytes() == b"kept\n"
    assert engine.calls == ["get", "pause", "pause", "pause", "get-frozen", "unpause"]


def test_a_freezer_that_never_succeeds_leaves_unfrozen_retries(tmp_path: Path) -> None:
    engine = _Engine(cut=3, refusals=container_module.PAUSE_TRIES)
    AttemptContainer(engine).get_directory("/attempt/home", tmp_path / "out")
    assert (tmp_path / "out" / "kept.txt").read_bytes() == b"kept\n"
    pauses = ["pause"] * container_module.PAUSE_TRIES
    assert engine.calls == ["get", *pauses, "get", "get", "get"]


def test_a_copy_cut_every_time_is_copy_failed_naming_the_path(tmp_path: Path) -> None:
    engine = _Engine(cut=100, refusals=100)
    with pytest.raises(EnvironmentFailure) as caught:
        AttemptContainer(engine).get_directory("/attempt/home", tmp_path / "out")
    assert caught.value.code == "copy_failed"
    assert "/attempt/home" in str(caught.value)
    assert engine.calls.count("get") == 1 + container_module.UNFROZEN_TRIES
