"""The GPUs a Docker engine offers, and whether a container's request can be met.

One function finds the devices (`available_gpus`: the engine's NVIDIA runtime and the GPUs
`nvidia-smi` lists through it); one matches a request against them (`unmet_request`, pure, so
the type matching is tested with recorded device lists). A request that cannot be met is
`environment_gpu_unavailable` before any container starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from agevalx.environments.engine import EnvironmentFailure, client

PROBE_IMAGE = "ageval/base:bookworm"
"""The image the probe runs `nvidia-smi` in (the NVIDIA runtime mounts the tool)."""


@cache
def available_gpus() -> tuple[str, ...]:
    """The names of the engine's GPUs (`NVIDIA A100-SXM4-80GB`, ...); none without the NVIDIA
    container runtime."""
    engine = client()
    if "nvidia" not in (engine.info().get("Runtimes") or {}):
        return ()
    try:
        output = engine.containers.run(
            PROBE_IMAGE,
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            runtime="nvidia",
            environment={"NVIDIA_VISIBLE_DEVICES": "all"},
            remove=True,
        )
    except Exception:  # a runtime without devices, or an image without the tool
        return ()
    text = output.decode("utf-8", "replace") if isinstance(output, bytes) else str(output)
    return tuple(line.strip() for line in text.splitlines() if line.strip())


def unmet_request(count: int, types: Sequence[str] | None, devices: Sequence[str]) -> str | None:
    """Why `count` GPUs of one of `types` (substrings of a device name, any case; any type
    when None or empty) cannot be had from `devices`; None when they can."""
    if count <= 0:
        return None
    wanted = [kind.lower() for kind in types or ()]
    matching = [d for d in devices if not wanted or any(kind in d.lower() for kind in wanted)]
    if len(matching) >= count:
        return None
    if not devices:
        return f"{count} GPU(s) are needed and this Docker engine has none"
    offered = ", ".join(sorted(set(devices)))
    kinds = f" of type {', '.join(types or ())}" if wanted else ""
    return f"{count} GPU(s){kinds} are needed; this engine offers {len(devices)}: {offered}"


def check_gpus(count: int | None, types: Sequence[str] | None = None, *, what: str) -> None:
    """Raise `environment_gpu_unavailable` when `count` GPUs of `types` cannot be had."""
    if not count:
        return
    problem = unmet_request(count, types, available_gpus())
    if problem is not None:
        raise EnvironmentFailure(
            "environment_gpu_unavailable",
            f"{what}: {problem}",
            hint="run on a machine with the GPUs and the NVIDIA container runtime",
        )


@dataclass(frozen=True)
class GpuRequest:
    """GPUs one container of an attempt needs."""

    count: int | None
    types: tuple[str, ...] = ()
    """Acceptable models (substrings of a device name); any when empty."""
    what: str = "the attempt container"
    """Which container asks, for the error message."""


def check_requests(requests: Sequence[GpuRequest]) -> None:
    """`check_gpus` for each request, in order (the first unmet one raises)."""
    for request in requests:
        check_gpus(request.count, request.types, what=request.what)
