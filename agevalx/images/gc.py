"""Orphaned images: images ageval made for this cache that none of its entries names.

Every image ageval makes (task images `ageval/env`, scoring images `ageval/scoring`, committed
attempts `ageval/run`, replays' `ageval/replay`) is labelled with the cache it was made for
and the process that made it (see `build.image_labels`). One is orphaned when no action entry
of that cache names it (run nodes' `committed_image`/`committed_image_id`, image nodes'
`reference`/`image_id`) and its maker is no longer running (a live process may not have
stored its entry yet): a run killed before its entry was written, or an entry `ageval cache
gc` deleted. Images of other caches on the same engine, and images without a cache label,
are never touched: another cache may still need them. A cache removed and made again at the
same path is another cache: its random id (`ageval.cache.instance`) tells their images apart.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import docker
from pydantic import BaseModel, ConfigDict

from agevalx.cache.scan import iter_action_files
from agevalx.cache.store import CacheStore
from agevalx.environments.engine import LABEL, EnvironmentFailure, client
from agevalx.environments.owners import Owner, is_alive, this_process
from agevalx.images.build import CACHE_INSTANCE_LABEL, CACHE_LABEL, cache_identity

REPOSITORIES = ("ageval/run", "ageval/env", "ageval/scoring", "ageval/replay")
"""The repositories ageval tags its images in."""
REFERENCE_FIELDS = ("committed_image", "committed_image_id", "reference", "image_id")
"""Action-entry meta fields that name an image (by reference or by id)."""


class OrphanImage(BaseModel):
    """An image no entry of the cache names."""

    model_config = ConfigDict(extra="forbid")

    id: str
    """The image id."""
    tags: list[str]
    """Its repository tags (none for a dangling image)."""
    size: int
    """Its size in bytes (layers shared with other images included)."""


class ImageGcReport(BaseModel):
    """Orphaned images found, and whether they were removed."""

    model_config = ConfigDict(extra="forbid")

    orphaned: list[OrphanImage] = []
    """This cache's images that no entry names and no live process is making."""
    removed: list[OrphanImage] = []
    """Those removed (with `--images`)."""
    kept: int = 0
    """This cache's images that an entry names."""

    @property
    def orphaned_bytes(self) -> int:
        return sum(image.size for image in self.orphaned)


def referenced_images(store: CacheStore) -> set[str]:
    """Every image id and reference that an action entry of `store` names."""
    named: set[str] = set()
    for action in iter_action_files(store):
        meta = action.manifest.meta if action.manifest is not None else {}
        named.update(str(meta[field]) for field in REFERENCE_FIELDS if meta.get(field))
    return named


def collect_images(store: CacheStore, *, remove: bool) -> ImageGcReport:
    """Find this cache's orphaned images and, with `remove`, remove them. Holds the cache's
    gc lock, so no entry naming an image is written meanwhile."""
    with store.lock.exclusive():
        named = referenced_images(store)
        images = [
            image
            for image in _cache_images(cache_identity(store))
            if _this_instance(image, store.instance)
        ]
        report = ImageGcReport()
        for image in images:
            tags = [tag for tag in image.get("RepoTags") or [] if tag != "<none>:<none>"]
            if image["Id"] in named or any(tag in named for tag in tags):
                report.kept += 1
            elif _made_by_ageval(image, tags) and not _in_the_making(image):
                report.orphaned.append(
                    OrphanImage(id=image["Id"], tags=tags, size=int(image.get("Size") or 0))
                )
        if remove:
            report.removed = list(_remove(report.orphaned))
    return report


def _cache_images(identity: str) -> list[dict[str, Any]]:
    try:
        found: list[dict[str, Any]] = client().api.images(
            filters={"label": f"{CACHE_LABEL}={identity}"}
        )
    except (docker.errors.DockerException, OSError) as exc:
        raise EnvironmentFailure("docker_unavailable", f"the Docker engine failed: {exc}") from None
    return found


def _this_instance(image: dict[str, Any], instance: str) -> bool:
    """Whether an image labelled with this cache's path was made for this cache and not for
    an earlier one removed from the same path. An image without the label (made by an ageval
    before it existed) is left alone: which cache made it cannot be told."""
    return bool((image.get("Labels") or {}).get(CACHE_INSTANCE_LABEL) == instance)


def _made_by_ageval(image: dict[str, Any], tags: list[str]) -> bool:
    labels = image.get("Labels") or {}
    return LABEL in labels or any(tag.rsplit(":", 1)[0] in REPOSITORIES for tag in tags)


def _in_the_making(image: dict[str, Any]) -> bool:
    """Made by another process that still runs (or runs on another host): its entry may
    still come. This process's own images are finished: it is collecting, not running."""
    owner = Owner.from_labels(image.get("Labels"))
    return owner is not None and owner != this_process() and is_alive(owner)


def _remove(images: Iterable[OrphanImage]) -> Iterable[OrphanImage]:
    """Remove each image; one a container still uses stays (and is not yielded). Only the
    image itself: its untagged parents stay (`noprune`), since an entry may name one by id,
    as when another cache's build of the same key took its tag and a run started from that."""
    api = client().api
    for image in images:
        try:
            api.remove_image(image.id, force=True, noprune=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError:
            continue
        yield image
