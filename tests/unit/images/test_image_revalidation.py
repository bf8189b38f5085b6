"""Before a run, each cached image is asked of the engine once, however many tasks share it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agevalx.cache.manifest import ActionManifest, OutputRef
from agevalx.cache.store import CacheStore
from agevalx.graph.nodes import Node
from agevalx.graph.plan import Plan
from agevalx.images import build
from agevalx.operations.planning import PlanRequest, plan

pytestmark = pytest.mark.unit


def _cached_image(node: Node, reference: object) -> None:
    output = OutputRef(digest="0" * 32, type="blob")
    node.action = ActionManifest.create(
        node.kind, node.key, {"image": output}, {"reference": reference}
    )
    node.status = "hit"


def _images(planned: Plan) -> list[Node]:
    return [node for node in planned.nodes() if node.kind == "image"]


def test_each_image_is_asked_once_and_a_missing_one_is_a_miss(
    dataset: Path, store: CacheStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    planned = plan(PlanRequest(dataset=dataset, k=2), store)
    alpha, beta = _images(planned)
    _cached_image(alpha, "ageval/env:shared")
    _cached_image(beta, "ageval/env:shared")
    asked: list[str] = []
    monkeypatch.setattr(build, "image_exists", lambda ref: asked.append(ref) or False)
    build.revalidate_images(planned)
    assert asked == ["ageval/env:shared"]
    assert [(node.status, node.action) for node in (alpha, beta)] == [("miss", None)] * 2


@pytest.mark.parametrize("reference", [None, 7, {"name": "x"}, ["x"]])
def test_an_image_entry_without_a_reference_is_a_miss(
    dataset: Path, store: CacheStore, monkeypatch: pytest.MonkeyPatch, reference: object
) -> None:
    planned = plan(PlanRequest(dataset=dataset), store)
    image = _images(planned)[0]
    _cached_image(image, reference)
    monkeypatch.setattr(build, "image_exists", lambda ref: True)
    build.revalidate_images(planned)
    assert (image.status, image.action) == ("miss", None)
