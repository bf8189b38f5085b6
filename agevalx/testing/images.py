"""The images a test suite's caches left on the engine, removed once the suite has ended.

Every image ageval makes is labelled with the cache it was made for (`ageval.cache`, the
cache's path; see `images.build.image_labels`). Each test runs with a cache of its own under
pytest's temporary folder, which pytest deletes later, so the images made for it (the attempts'
committed images, task and scoring images, and the build steps under them) outlive every
entry that names them: no `ageval cache gc` can reach them, and a developer's engine gathered
thousands of them (25,000 images, 14 GB, after a few days of suite runs). An engine with that
many images lists them and probes its build cache more slowly: dockerd spent 45% of its CPU on
those two during a suite run there.

`python -m agevalx.testing.images ROOT` removes every image labelled with a cache under ROOT,
newest first (a committed attempt before the task image it was made from), parents no other
image needs included. An image a container still uses, or that another image still builds
on, stays (nothing is forced). The test command (scripts/test.sh) gives each pytest run a base
folder under one ROOT of its own and runs this once the suite has reported.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker

from agevalx.environments.engine import EnvironmentFailure, client
from agevalx.images.build import CACHE_LABEL


@dataclass
class Removal:
    """What `remove_cache_images` did."""

    found: int = 0
    """Images labelled with a cache under the root."""
    removed: int = 0
    """Those removed."""
    kept: int = 0
    """Those still used by a container or built on by another image."""


def cache_images(root: Path) -> list[dict[str, Any]]:
    """The engine's images labelled with a cache under `root`, newest first."""
    resolved = root.resolve()
    images: list[dict[str, Any]] = client().api.images(filters={"label": CACHE_LABEL})
    found = [image for image in images if _under(image, resolved)]
    return sorted(found, key=lambda image: int(image.get("Created") or 0), reverse=True)


def _under(image: dict[str, Any], root: Path) -> bool:
    cache = (image.get("Labels") or {}).get(CACHE_LABEL)
    return bool(cache) and Path(str(cache)).is_relative_to(root)


def remove_cache_images(root: Path) -> Removal:
    """Remove the images made for the caches under `root` (see the module). An image refused
    for its children (made in the same second as one of them, so listed before it) is tried
    again once a pass has removed something."""
    pending = cache_images(root)
    removal = Removal(found=len(pending))
    api = client().api
    while pending:
        refused = []
        for image in pending:
            try:
                api.remove_image(image["Id"])
            except docker.errors.NotFound:
                pass  # gone with a child already (an untagged parent)
            except docker.errors.APIError:
                refused.append(image)
                continue
            removal.removed += 1
        if len(refused) == len(pending):
            break
        pending = refused
    removal.kept = len(pending)
    return removal


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agevalx.testing.images",
        description="Remove the images made for the ageval caches under ROOT.",
    )
    parser.add_argument("root", type=Path, help="a folder the test caches were under")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = parser.parse_args(argv)
    try:
        removal = remove_cache_images(args.root)
    except EnvironmentFailure as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except (docker.errors.DockerException, OSError) as exc:
        print(f"docker_unavailable: the Docker engine failed: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(removal.__dict__))
    else:
        print(
            f"{removal.removed} of {removal.found} images made for the caches under "
            f"{args.root} removed ({removal.kept} still in use)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
