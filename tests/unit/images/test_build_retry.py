"""An image build whose cached step's image another process removed meanwhile (the builder's
"unable to find image") is asked again; any other build failure is reported at once."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import docker
import pytest

from agevalx.environments.engine import EnvironmentFailure
from agevalx.images import build as build_module

pytestmark = pytest.mark.unit

VANISHED = 'unable to find image "sha256:52a61d09e3242dedb7dca4a2dd6d3fa6"'


class _Images:
    def __init__(self, errors: list[str], output: str) -> None:
        self.errors = errors
        self.output = output
        self.calls = 0

    def build(self, **arguments: Any) -> tuple[Any, list[Any]]:
        self.calls += 1
        if self.errors:
            message = self.errors.pop(0)
            raise docker.errors.BuildError(message, [{"stream": self.output}])
        return SimpleNamespace(id="sha256:built"), []


def _build(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    errors: list[str],
    output: str = "Step 2/12 : RUN mkdir\n",
) -> tuple[Any, Any]:
    images = _Images(errors, output)
    monkeypatch.setattr(build_module, "client", lambda: SimpleNamespace(images=images))
    store: Any = SimpleNamespace(root=tmp_path, instance="instance")

    def run() -> str:
        return build_module.build(
            tmp_path,
            "ageval/env:key",
            platform=None,
            build_args={},
            labels={},
            display="task/environment/Dockerfile",
            store=store,
        )

    return images, run


def test_a_vanished_cache_image_is_built_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    images, run = _build(monkeypatch, tmp_path, [VANISHED, VANISHED])
    assert run() == "sha256:built"
    assert images.calls == 3


def test_a_cache_image_vanishing_every_time_is_image_build_failed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    images, run = _build(monkeypatch, tmp_path, [VANISHED] * 5)
    with pytest.raises(EnvironmentFailure) as caught:
        run()
    assert caught.value.code == "image_build_failed"
    assert "unable to find image" in caught.value.message
    assert images.calls == build_module.VANISHED_CACHE_TRIES


def test_a_dockerfile_that_fails_is_not_built_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    images, run = _build(monkeypatch, tmp_path, ["The command '/bin/sh -c false' returned 1"])
    with pytest.raises(EnvironmentFailure) as caught:
        run()
    assert caught.value.code == "image_build_failed"
    assert images.calls == 1


def test_a_dockerfile_whose_output_names_the_vanished_cache_is_not_built_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # the build's output is the task's: what its script prints cannot ask for another build
    output = 'Step 3/3 : RUN ./setup.sh\nunable to find image "sha256:52a61d09"\n'
    failed = "The command '/bin/sh -c ./setup.sh' returned a non-zero code: 1"
    images, run = _build(monkeypatch, tmp_path, [failed], output)
    with pytest.raises(EnvironmentFailure) as caught:
        run()
    assert caught.value.code == "image_build_failed"
    assert images.calls == 1
