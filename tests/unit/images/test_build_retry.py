"""An image build whose cached step's image another process removed meanwhile (the builder's
"unable to find image") is asked again; any other build failure is reported at once. The
task's own Dockerfile is built unlabelled, then every label goes in one `LABEL` step over it
(each label given to the engine's builder is a step, a container and a commit, of its own)."""

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
        self.arguments: list[dict[str, Any]] = []
        self.triggers: list[str] = []

    def build(self, **arguments: Any) -> tuple[Any, list[Any]]:
        self.calls += 1
        self.arguments.append(arguments)
        if self.errors:
            message = self.errors.pop(0)
            raise docker.errors.BuildError(message, [{"stream": self.output}])
        attrs = {"Config": {"OnBuild": self.triggers or None}}
        return SimpleNamespace(id="sha256:built", attrs=attrs), []


def _build(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    errors: list[str],
    output: str = "Step 2/12 : RUN mkdir\n",
    labels: dict[str, str] | None = None,
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
            labels=labels or {},
            display="task/environment/Dockerfile",
            store=store,
        )

    return images, run


def test_a_vanished_cache_image_is_built_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    images, run = _build(monkeypatch, tmp_path, [VANISHED, VANISHED])
    assert run() == "sha256:built"
    assert images.calls == 4  # the Dockerfile three times, then its label step


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


def test_every_label_goes_in_one_step_over_the_unlabelled_image(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    labels = {"ageval.task": 'odd "task" $HOME \\ name'}
    images, run = _build(monkeypatch, tmp_path, [], labels=labels)
    assert run() == "sha256:built"
    own, labelled = images.arguments
    assert own["path"] == str(tmp_path) and own["dockerfile"] == "Dockerfile"
    assert "tag" not in own and "labels" not in own
    assert labelled["tag"] == "ageval/env:key" and labelled["labels"] == {}
    text = labelled["fileobj"].getvalue().decode()
    first, step, end = text.split("\n")
    assert first == "FROM sha256:built" and end == ""
    # one step: every label, quoted so that nothing in a value is expanded or ends the word
    assert step.startswith("LABEL ") and step.count("LABEL") == 1
    assert '"ageval"="image"' in step
    assert '"ageval.task"="odd \\"task\\" \\$HOME \\\\ name"' in step
    assert f'"ageval.cache"="{tmp_path.resolve()}"' in step
    assert '"ageval.cache.instance"="instance"' in step


def test_a_label_a_dockerfile_line_cannot_hold_goes_as_the_builds_own_label(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    images, run = _build(monkeypatch, tmp_path, [], labels={"ageval.task": "two\nlines"})
    run()
    labelled = images.arguments[1]
    assert labelled["labels"] == {"ageval.task": "two\nlines"}
    assert "two" not in labelled["fileobj"].getvalue().decode()


def test_an_image_removed_before_its_label_step_is_built_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    images, run = _build(monkeypatch, tmp_path, [])
    original = images.build
    failures = ["pull access denied for sha256"]

    def build(**arguments: Any) -> tuple[Any, list[Any]]:
        if "fileobj" in arguments and failures:
            images.calls += 1
            raise docker.errors.BuildError(failures.pop(), [])
        return original(**arguments)

    images.build = build
    monkeypatch.setattr(build_module, "image_exists", lambda image: False)
    assert run() == "sha256:built"
    assert images.calls == 4  # the Dockerfile, its label step (its image gone), both again


def test_an_image_with_onbuild_triggers_is_labelled_in_its_own_build(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # a build FROM it would run its triggers (a COPY of a context it does not have)
    images, run = _build(monkeypatch, tmp_path, [])
    images.triggers = ["COPY . /app"]
    assert run() == "sha256:built"
    own, labelled = images.arguments
    assert "fileobj" not in labelled and labelled["path"] == own["path"]
    assert labelled["tag"] == "ageval/env:key" and labelled["labels"]["ageval"] == "image"
