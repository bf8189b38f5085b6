"""The image node: build a task's environment/Dockerfile (context: environment/), or use the
image named by `environment_options.image`. An unchanged context is a cache hit: never rebuilt."""

from __future__ import annotations

import json
from typing import Any

import docker

from agevalx.cache.manifest import ActionManifest, OutputRef
from agevalx.cache.store import CacheStore
from agevalx.environments.engine import LABEL, EnvironmentFailure, client, image_exists
from agevalx.graph.execute import ExecutionContext, NodeResult
from agevalx.graph.nodes import Node
from agevalx.graph.plan import Plan

REPOSITORY = "ageval/env"


def image_tag(node_key: str) -> str:
    return f"{REPOSITORY}:{node_key}"


def _lock_of(context: ExecutionContext, node: Node) -> dict[str, Any]:
    lock: dict[str, Any] = context.plan.node(f"lock:{node.task_id}").payload["lock"]
    return lock


def _use_named(reference: str, platform: str | None) -> str:
    if not image_exists(reference):
        try:
            client().images.pull(reference, platform=platform)
        except docker.errors.APIError as exc:
            raise EnvironmentFailure(
                "image_unavailable",
                f"the image {reference} is not present and cannot be pulled: {exc.explanation}",
                hint="load it with `docker load`, or make a registry reachable",
            ) from None
    return str(client().images.get(reference).id)


def _build(node: Node, context: ExecutionContext, options: dict[str, Any]) -> str:
    assert node.task_id is not None
    context_dir = context.plan.dataset.task_dir(node.task_id) / "environment"
    tag = image_tag(node.key)
    try:
        image, _ = client().images.build(
            path=str(context_dir),
            dockerfile="Dockerfile",
            tag=tag,
            rm=True,
            forcerm=True,
            pull=False,
            platform=options.get("platform"),
            buildargs={"PYTHON_VERSION": options.get("python_version", "3.12")},
            labels={LABEL: "image", f"{LABEL}.task": node.task_id},
        )
    except docker.errors.BuildError as exc:
        tail = "".join(str(item.get("stream", item.get("error", ""))) for item in exc.build_log)
        raise EnvironmentFailure(
            "image_build_failed",
            f"building environment/Dockerfile failed: {exc.msg}",
            file=f"{node.task_id}/environment/Dockerfile",
            hint=tail.strip()[-500:] or None,
        ) from None
    except docker.errors.APIError as exc:
        raise EnvironmentFailure(
            "image_build_failed", f"docker refused the build: {exc.explanation}"
        ) from None
    return str(image.id)


def execute_image(node: Node, context: ExecutionContext) -> NodeResult:
    options = _lock_of(context, node)["binding"]["environment_options"]
    if options.get("image"):
        image_id, reference = (
            _use_named(options["image"], options.get("platform")),
            options["image"],
        )
    else:
        image_id, reference = _build(node, context, options), image_tag(node.key)
    document = {"image_id": image_id, "reference": reference}
    digest = context.store.put_bytes(json.dumps(document, sort_keys=True).encode())
    return NodeResult(outputs={"image": OutputRef(digest=digest, type="blob")}, meta=document)


def reference_of(store: CacheStore, action: ActionManifest) -> str:
    """The image reference an image node's output names."""
    document = json.loads(store.get_bytes(action.outputs["image"].digest))
    return str(document["reference"])


def image_reference(context: ExecutionContext, node: Node) -> str:
    """The image a run node starts from: its parent image node's output."""
    return reference_of(context.store, context.parent_result(node, "image"))


def image_still_present(action_meta: dict[str, Any]) -> bool:
    """A cached image node is only a hit where its image exists on this engine."""
    reference = action_meta.get("reference")
    return isinstance(reference, str) and image_exists(reference)


def revalidate_images(planned: Plan) -> None:
    """Mark a planned image node a miss where this engine no longer holds its image."""
    for node in planned.nodes():
        stale = node.action is not None and not image_still_present(dict(node.action.meta))
        if node.kind == "image" and stale:
            node.status, node.action = "miss", None
