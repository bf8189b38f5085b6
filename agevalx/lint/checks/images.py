"""Images: floating references, unpinned packages, a Harbor task without a prebuilt
image (seed 003)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from agevalx.lint.dockerfile import base_images, instructions
from agevalx.lint.rule import AGENT_DOCKERFILE, Hit, dockerfiles, table
from agevalx.lint.source import LintTask, line_of

OFFLINE_BASE = "ageval/base:"


def floating_image(reference: str) -> bool:
    """No digest and no tag, or the tag `latest` (ageval's offline base is always fine; a
    reference built from a `$VARIABLE` cannot be judged)."""
    if "$" in reference or "@" in reference or reference.startswith(OFFLINE_BASE):
        return False
    name = reference.rsplit("/", 1)[-1]
    return ":" not in name or name.split(":", 1)[1] == "latest"


def _image_references(task: LintTask) -> Iterator[tuple[str, str, int | None]]:
    """(file, image, line) of every image the task names."""
    for name in dockerfiles(task):
        for image, line in base_images(task.text(name) or ""):
            yield name, image, line
    config = task.config
    declared: list[str] = []
    if task.format == "ageval":
        for environment in table(config, "evaluation", "environments").values():
            if isinstance(environment, dict):
                declared.append(environment.get("docker_image") or "")
    else:
        declared.append(table(config, "environment").get("docker_image") or "")
        declared.append(table(config, "verifier", "environment").get("docker_image") or "")
    config_text = task.text(task.config_name)
    for image in declared:
        if isinstance(image, str) and image:
            yield task.config_name, image, line_of(config_text, re.escape(image))
    compose = task.compose
    if compose is not None:
        name, text, services = compose
        for service in services.values():
            used = service.get("image") if isinstance(service, dict) else None
            if isinstance(used, str) and used:
                yield name, used, line_of(text, re.escape(used))


def base_image_unpinned(task: LintTask) -> Iterator[Hit]:
    for name, image, line in _image_references(task):
        if floating_image(image):
            yield Hit(
                name,
                line,
                f"the image {image!r} floats: it has no digest and no tag, or the tag latest",
                "pin it: name:tag@sha256:<digest> (at least a fixed tag); ageval/base:* is fine",
            )


_PIP_VALUE_FLAGS = frozenset(
    {
        "-r",
        "--requirement",
        "-c",
        "--constraint",
        "-e",
        "--editable",
        "-i",
        "--index-url",
        "--extra-index-url",
        "-f",
        "--find-links",
        "-t",
        "--target",
        "--prefix",
        "--root",
        "--python",
        "--platform",
        "--python-version",
        "--trusted-host",
        "--cache-dir",
        "--only-binary",
        "--no-binary",
    }
)


def unpinned_packages(command: str) -> list[str]:
    """The packages a shell command pip-installs without an exact `==` pin."""
    found: list[str] = []
    for segment in re.split(r"&&|\|\||;|\|", command):
        words = [word.strip("'\"") for word in segment.split()]
        for index, word in enumerate(words[:-1]):
            pip = re.fullmatch(r"pip[0-9.]*", word.rsplit("/", 1)[-1]) is not None
            if pip and words[index + 1] == "install":
                found += _unpinned_arguments(words[index + 2 :])
    return found


def _unpinned_arguments(arguments: list[str]) -> list[str]:
    found: list[str] = []
    skip = False
    for argument in arguments:
        if skip:
            skip = False
        elif argument.startswith("-"):
            skip = argument in _PIP_VALUE_FLAGS
        elif not (
            "==" in argument
            or "@" in argument
            or "/" in argument
            or "$" in argument
            or argument.startswith(".")
            or argument.endswith((".whl", ".tar.gz", ".zip"))
        ):
            found.append(argument)
    return found


def dependency_unpinned(task: LintTask) -> Iterator[Hit]:
    for name in dockerfiles(task):
        for instruction in instructions(task.text(name) or ""):
            if instruction.keyword != "RUN":
                continue
            packages = unpinned_packages(instruction.argument)
            if packages:
                yield Hit(
                    name,
                    instruction.line,
                    f"pip installs {', '.join(packages)} without an exact version",
                    "pin each package (numpy==1.26.4) so the image builds the same next year",
                )


def _declared_image(task: LintTask) -> bool:
    return bool(table(task.config, "environment").get("docker_image"))


def docker_image_missing(task: LintTask) -> Iterator[Hit]:
    if task.config is None or _declared_image(task) or AGENT_DOCKERFILE not in task.files:
        return
    yield Hit(
        task.config_name,
        line_of(task.text(task.config_name), r"^\s*\[environment\]"),
        "no [environment] docker_image: ageval builds environment/Dockerfile, but a runner "
        "that builds nothing (seed 003) refuses the task before any environment starts",
        "build and push the image, then set docker_image = 'registry/name:tag@sha256:<digest>'",
    )


def image_source_missing(task: LintTask) -> Iterator[Hit]:
    if task.config is None or _declared_image(task) or AGENT_DOCKERFILE in task.files:
        return
    yield Hit(
        task.config_name,
        line_of(task.text(task.config_name), r"^\s*\[environment\]"),
        "the task has no [environment] docker_image and no environment/Dockerfile: "
        "nothing can start it",
        "set docker_image to a prebuilt image (compose-only environments are not run)",
    )
