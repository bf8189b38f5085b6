"""Access to the Docker engine through the Docker SDK, with coded errors."""

from __future__ import annotations

import contextlib
import os
from functools import cache
from typing import Any
from urllib.parse import urlsplit

import docker
import requests
from docker.errors import DockerException

from agevalx.errors import AgevalError, UsageError
from agevalx.failures import ENGINE_UNAVAILABLE

LABEL = "ageval"
"""Every container and image ageval creates carries this label (value: what it is)."""
TIMEOUT_ENV = "AGEVAL_ENGINE_TIMEOUT"
DEFAULT_TIMEOUT = 300.0
"""Seconds one engine call may take before the engine is taken as not answering: a commit or
a copy of a large tree takes minutes; a start, an inspect or a removal, a second."""


class EnvironmentFailure(AgevalError):
    """The environment (Docker, images, containers) failed; the attempt is ERROR."""


class EngineUnresponsive(EnvironmentFailure, OSError):
    """The engine did not answer a call within the client's timeout (`engine_unavailable`):
    it is overloaded beyond use, or deadlocked (docs/docker-setup.md). An `OSError` as well,
    as the client's timeout it replaces is: code that bears a failed engine call (a cleanup,
    a probe) bears this one the same way."""


def engine_timeout() -> float:
    """The client's timeout: `$AGEVAL_ENGINE_TIMEOUT` seconds, else `DEFAULT_TIMEOUT`."""
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(raw)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        raise UsageError(
            "invalid_engine_timeout",
            f"{TIMEOUT_ENV} must be a number of seconds above 0, not {raw!r}",
            field=TIMEOUT_ENV,
            hint=f"unset it for the default ({DEFAULT_TIMEOUT:g} s)",
        )
    return seconds


def _answering(api: Any, timeout: float) -> None:
    """Make the client's timeout an `EngineUnresponsive` that names the call."""
    send = api.send

    def send_in_time(request: Any, **kwargs: Any) -> Any:
        try:
            return send(request, **kwargs)
        except requests.exceptions.Timeout as exc:
            call = f"{request.method} {urlsplit(request.url).path}"
            raise EngineUnresponsive(
                ENGINE_UNAVAILABLE,
                f"the Docker engine did not answer `{call}` within {timeout:g} s",
                hint="if `docker inspect` of a container hangs too, the engine is stuck "
                "(docs/docker-setup.md): restart it, then run the same command again; what "
                "finished is reused",
            ) from exc

    api.send = send_in_time


@cache
def client() -> Any:
    """The Docker client for `DOCKER_HOST` or the default socket."""
    timeout = engine_timeout()
    try:
        engine = docker.from_env(timeout=timeout)
        _answering(engine.api, timeout)
        engine.ping()
    except DockerException as exc:
        raise EnvironmentFailure(
            "docker_unavailable",
            f"cannot reach the Docker engine: {exc}",
            hint="start one with: bash scripts/setup-docker.sh (as root)",
        ) from None
    return engine


def image_exists(reference: str) -> bool:
    try:
        client().images.get(reference)
    except docker.errors.ImageNotFound:
        return False
    except (DockerException, OSError) as exc:
        raise EnvironmentFailure("docker_unavailable", f"the Docker engine failed: {exc}") from None
    return True


def remove_image(reference: str) -> None:
    """Remove an image ageval made; a missing one is fine."""
    with contextlib.suppress(DockerException, OSError):
        client().images.remove(reference, force=True)
