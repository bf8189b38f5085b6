"""Image nodes: a task's environment image, and the images it is scored in.

The `image` node builds environment/Dockerfile (context: environment/), or uses the image
named by `environment_options.image`; the `scoring_image` node builds or pulls the image the
lock's `scoring_image` names (a Harbor task's separate verifier environment); the
`scoring_host` node finds the official CPython image of an isolated scoring host. An unchanged
context is a cache hit: never rebuilt.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import docker

from agevalx.cache.manifest import ActionManifest, OutputRef
from agevalx.cache.store import CacheStore
from agevalx.environments.engine import LABEL, EnvironmentFailure, client, image_exists
from agevalx.environments.owners import owner_labels
from agevalx.graph.context import ExecutionContext, NodeResult
from agevalx.graph.nodes import Node
from agevalx.graph.plan import Plan
from agevalx.graph.registry import node_executor
from agevalx.hashing import digest_json
from agevalx.lockfile.node import task_lock

REPOSITORY = "ageval/env"
SCORING_REPOSITORY = "ageval/scoring"
VANISHED_CACHE = "unable to find image"
"""The builder's error when the image of a cached step was removed during the build."""
VANISHED_CACHE_TRIES = 3
CACHE_LABEL = f"{LABEL}.cache"
"""Labels every image ageval makes with the cache it was made for (`ageval cache gc
--images` removes only its own cache's images that none of its entries names)."""


CACHE_INSTANCE_LABEL = f"{LABEL}.cache.instance"
"""The cache's random id (`CacheStore.instance`): a cache made again at the same path does
not count the images of the one before as its own."""


def image_labels(store: CacheStore) -> dict[str, str]:
    """Labels of an image made now for `store`: its cache and this process as its owner."""
    return {
        CACHE_LABEL: cache_identity(store),
        CACHE_INSTANCE_LABEL: store.instance,
        **owner_labels(),
    }


def cache_identity(store: CacheStore) -> str:
    return str(store.root.resolve())


def image_tag(node_key: str, repository: str = REPOSITORY) -> str:
    return f"{repository}:{node_key}"


def use_named(reference: str, platform: str | None, *, field: str | None = None) -> str:
    """The id of `reference`, pulled when this engine lacks it."""
    if not image_exists(reference):
        try:
            client().images.pull(reference, platform=platform)
        except docker.errors.APIError as exc:
            raise EnvironmentFailure(
                "image_unavailable",
                f"the image {reference} is not present and cannot be pulled: {exc.explanation}",
                field=field,
                hint="load it with `docker load`, or make a registry reachable",
            ) from None
    return str(client().images.get(reference).id)


def build(
    context_dir: Path,
    tag: str,
    *,
    platform: str | None,
    build_args: dict[str, str],
    labels: dict[str, str],
    display: str,
    store: CacheStore,
    dockerfile: str = "Dockerfile",
) -> str:
    """Build `context_dir`/`dockerfile` as `tag` (offline: `pull=False`), labelled with
    `labels` and the cache's and owner's (`image_labels`); the image id.

    Two builds. The task's own Dockerfile first, with no label and no tag; then one `LABEL`
    step over that image carrying every label at once, tagged `tag`. The engine's builder
    makes each label given to a build a step of its own, each step a container and a commit,
    and an image's labels name its cache and the process that made it: they differ from one
    cache and one process to the next, so a labelled build of an unchanged Dockerfile missed
    the builder's cache at its first label and ran a container for each label after it (8
    containers and commits: an unchanged Dockerfile built for a new cache took 0.59 s of CPU,
    now 0.21). The task's own steps are the same for every cache: the builder's cache answers
    them, and the labels cost one container. A Dockerfile that declares `ONBUILD` triggers
    is labelled in its own build as before: a build `FROM` its image would run them.

    The builder reuses the image of a step it built before as that step's cache; an image
    removed meanwhile by another process (`ageval cache gc --images`, another run's
    cleanup) fails the build with "unable to find image": the build is then asked again
    (`VANISHED_CACHE_TRIES` in all), and builds the vanished step afresh. Only the builder's
    error is read, not the build's output; a failing `RUN` whose own command text holds those
    words is built 3 times, never more."""
    own: dict[str, Any] = {
        "path": str(context_dir),
        "dockerfile": dockerfile,
        "rm": True,
        "forcerm": True,
        "pull": False,
        "platform": platform,
        "buildargs": build_args,
    }
    every = {LABEL: "image", **labels, **image_labels(store)}
    for tries in range(1, VANISHED_CACHE_TRIES + 1):
        built = None
        try:
            image = _build_image(own, display)
            built = str(image.id)
            if (image.attrs.get("Config") or {}).get("OnBuild"):
                # a build FROM it would run its ONBUILD triggers: labels step by step
                return _build_once({**own, "tag": tag, "labels": every}, display)
            return _labelled(built, tag, every, platform, display)
        except EnvironmentFailure as exc:
            # the builder's error only: the hint is the build's output, which the task writes;
            # or the unlabelled image itself removed before its label step
            vanished = VANISHED_CACHE in exc.message or (built and not image_exists(built))
            if tries == VANISHED_CACHE_TRIES or not vanished:
                raise
    raise AssertionError("unreachable")


def _labelled(
    image_id: str, tag: str, labels: dict[str, str], platform: str | None, display: str
) -> str:
    """`image_id` with `labels`, in one `LABEL` step (a build of `FROM image_id`), tagged
    `tag`; the new image's id. A label holding a control character cannot be written in a
    Dockerfile line: such labels go as the build's own label arguments, a step each."""
    written = {k: v for k, v in labels.items() if not _UNWRITABLE.search(k + v)}
    line = " ".join(f"{_quoted(k)}={_quoted(v)}" for k, v in sorted(written.items()))
    text = f"FROM {image_id}\nLABEL {line}\n" if written else f"FROM {image_id}\n"
    arguments: dict[str, Any] = {
        "fileobj": io.BytesIO(text.encode()),
        "tag": tag,
        "rm": True,
        "forcerm": True,
        "pull": False,
        "platform": platform,
        "labels": {k: v for k, v in labels.items() if k not in written},
    }
    return _build_once(arguments, display)


_UNWRITABLE = re.compile(r"[\x00-\x1f\x7f]")
"""Characters a Dockerfile's quoted word cannot hold (a line ends at a newline)."""


def _quoted(text: str) -> str:
    """`text` as one double-quoted Dockerfile word: no variable is expanded in it."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
    return f'"{escaped}"'


def _build_once(arguments: dict[str, Any], display: str) -> str:
    return str(_build_image(arguments, display).id)


def _build_image(arguments: dict[str, Any], display: str) -> Any:
    """The built image, as the SDK inspected it when the build ended."""
    try:
        image, _ = client().images.build(**arguments)
    except docker.errors.BuildError as exc:
        tail = "".join(str(item.get("stream", item.get("error", ""))) for item in exc.build_log)
        raise EnvironmentFailure(
            "image_build_failed",
            f"building {display} failed: {exc.msg}",
            file=display,
            hint=tail.strip()[-500:] or None,
        ) from None
    except docker.errors.APIError as exc:
        raise EnvironmentFailure(
            "image_build_failed", f"docker refused the build: {exc.explanation}"
        ) from None
    return image


def _result(image_id: str, reference: str, context: ExecutionContext) -> NodeResult:
    document = {"image_id": image_id, "reference": reference}
    digest = context.store.put_bytes(json.dumps(document, sort_keys=True).encode())
    return NodeResult(outputs={"image": OutputRef(digest=digest, type="blob")}, meta=document)


@node_executor("image")
def execute_image(node: Node, context: ExecutionContext) -> NodeResult:
    assert node.task_id is not None
    options = task_lock(context, node.task_id).binding.environment_options
    platform = options.get("platform")
    if options.get("image"):
        reference = str(options["image"])
        return _result(use_named(reference, platform), reference, context)
    tag = image_tag(node.key)
    image_id = build(
        context.plan.dataset.task_dir(node.task_id) / "environment",
        tag,
        platform=platform,
        build_args={"PYTHON_VERSION": options.get("python_version", "3.12")},
        labels={f"{LABEL}.task": node.task_id},
        display=f"{node.task_id}/environment/Dockerfile",
        store=context.store,
    )
    return _result(image_id, tag, context)


@node_executor("scoring_image")
def execute_scoring_image(node: Node, context: ExecutionContext) -> NodeResult:
    assert node.task_id is not None
    lock = task_lock(context, node.task_id)
    wanted = lock.scoring_image
    assert wanted is not None  # the rule's `when` plans the node only then
    platform = lock.binding.environment_options.get("platform")
    if wanted.image is not None:
        return _result(
            use_named(wanted.image, platform, field="scoring_image"), wanted.image, context
        )
    assert wanted.context is not None
    tag = image_tag(node.key, SCORING_REPOSITORY)
    image_id = build(
        context.plan.dataset.task_dir(node.task_id) / wanted.context,
        tag,
        platform=platform,
        build_args={},
        labels={f"{LABEL}.task": node.task_id, f"{LABEL}.scoring": wanted.name},
        display=f"{node.task_id}/{wanted.context}/Dockerfile",
        store=context.store,
    )
    return _result(image_id, tag, context)


OFFICIAL_PYTHON = "python:{version}-slim"
"""The official CPython image of a python_version minor."""


def official_python(version: str, platform: str | None) -> tuple[str, str]:
    """The reference and id of the official CPython image of `version`, pulled when this
    engine lacks it; never another image in its place (`python_image_unavailable`)."""
    reference = OFFICIAL_PYTHON.format(version=version)
    if not image_exists(reference):
        try:
            client().images.pull(reference, platform=platform)
        except docker.errors.DockerException as exc:
            raise EnvironmentFailure(
                "python_image_unavailable",
                f"python_version {version} needs the official image {reference}, which this "
                f"engine lacks and cannot pull: {str(exc)[:300]}",
                field="evaluate_host.environment_options.python_version",
                hint=f"where a registry is reachable: docker pull {reference} && docker save "
                f"{reference} -o python.tar; here: docker load -i python.tar (ageval does not "
                "fall back to another Python)",
            ) from None
    return reference, str(client().images.get(reference).id)


@node_executor("scoring_host")
def execute_scoring_host(node: Node, context: ExecutionContext) -> NodeResult:
    assert node.task_id is not None
    host = task_lock(context, node.task_id).binding.evaluate_host["environment_options"]
    reference, image_id = official_python(
        str(host.get("python_version", "3.12")), host.get("platform")
    )
    return _result(image_id, reference, context)


def environment_image(context: ExecutionContext, task_id: str, name: str) -> str:
    """The image of the task's scoring host `name` (evaluation.environments): its
    `docker_image` when this engine has it, else its dockerfile built (tagged by the digests of
    its context's files, so an unchanged one is built once), else its `docker_image` pulled.
    Any failure is `scoring_host_unavailable`."""
    lock = task_lock(context, task_id)
    wanted = lock.task.evaluation.environments[name]
    field = f"evaluation.environments.{name}"
    try:
        if wanted.docker_image is not None and image_exists(wanted.docker_image):
            return wanted.docker_image
        if wanted.dockerfile is not None:
            folder, _, filename = wanted.dockerfile.rpartition("/")
            prefix = f"{folder}/" if folder else ""
            files = {path: entry.digest for path, entry in lock.files.items()}
            inputs = {p: d for p, d in files.items() if p.startswith(prefix)}
            key = digest_json({"dockerfile": wanted.dockerfile, "files": inputs})
            tag = image_tag(key, SCORING_REPOSITORY)
            if not image_exists(tag):
                build(
                    context.plan.dataset.task_dir(task_id) / folder,
                    tag,
                    platform=lock.binding.environment_options.get("platform"),
                    build_args={},
                    labels={f"{LABEL}.task": task_id, f"{LABEL}.scoring": name},
                    display=f"{task_id}/{wanted.dockerfile}",
                    store=context.store,
                    dockerfile=filename,
                )
            return tag
        assert wanted.docker_image is not None
        use_named(wanted.docker_image, None, field=field)
        return wanted.docker_image
    except EnvironmentFailure as exc:
        raise EnvironmentFailure(
            "scoring_host_unavailable",
            f"the scoring host {name!r} has no image: {exc.message}",
            file=f"{task_id}/task.yaml",
            field=field,
            hint=exc.hint,
        ) from None


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


IMAGE_KINDS = ("image", "scoring_image", "scoring_host")


def revalidate_images(planned: Plan) -> None:
    """Mark a planned image node a miss where this engine no longer holds its image; each
    image is asked of the engine once (the tasks of a dataset often share one)."""
    present: dict[str, bool] = {}
    for node in planned.nodes():
        if node.kind not in IMAGE_KINDS or node.action is None:
            continue
        reference = node.action.meta.get("reference")
        if isinstance(reference, str) and reference not in present:
            present[reference] = image_exists(reference)
        if not isinstance(reference, str) or not present[reference]:
            node.status, node.action = "miss", None
