"""The environment stage of an attempt: compose sidecars, the attempt container and its
preparation (the task format's: task data and environment/setup.sh, or Harbor's log
directories and healthcheck), all within the environment budget."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agevalx.environments.compose import ComposeProject
from agevalx.environments.container import AttemptContainer, ContainerSpec, in_background
from agevalx.environments.egress import EgressFence
from agevalx.environments.engine import EnvironmentFailure
from agevalx.environments.gpus import check_gpus


def remaining(deadline: float, what: str) -> float:
    """Seconds left before `deadline`; none left is `environment_timeout`."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise EnvironmentFailure("environment_timeout", f"environment_seconds ran out {what}")
    return left


Prepare = Callable[["AttemptEnvironment", float], None]
"""Readies a started environment for the agent before a deadline (its task format's hook)."""


@dataclass
class AttemptEnvironment:
    """A started attempt: its container and, when the task has one, its compose project."""

    container: AttemptContainer
    compose: ComposeProject | None = None
    fence: EgressFence | None = None
    """The `egress: llm` fence the container sits behind, removed with it."""

    @classmethod
    def start(
        cls,
        spec: ContainerSpec,
        seconds: float,
        *,
        compose_source: Path | None = None,
        compose_project: str | None = None,
        prepare: Prepare | None = None,
        fence: EgressFence | None = None,
    ) -> AttemptEnvironment:
        """Start the compose services (if any, as project `compose_project` when given), then
        the attempt container, then `prepare` it, all within `seconds`; a failure removes
        what was started (`fence` included). The sidecars carry the spec's labels."""
        try:
            return cls._start(spec, seconds, compose_source, compose_project, prepare, fence)
        except BaseException:
            if fence is not None:
                fence.close()
            raise

    @classmethod
    def _start(
        cls,
        spec: ContainerSpec,
        seconds: float,
        compose_source: Path | None,
        compose_project: str | None,
        prepare: Prepare | None,
        fence: EgressFence | None,
    ) -> AttemptEnvironment:
        deadline = time.monotonic() + seconds
        check_gpus(spec.gpus, spec.gpu_types, what="the attempt container")
        if (
            compose_source is None
            and spec.network_mode
            and spec.network_mode.startswith("service:")
        ):
            raise EnvironmentFailure(
                "compose_missing",
                f"network_mode {spec.network_mode} needs environment/compose.yaml",
            )
        compose = None
        if compose_source is not None:
            compose = ComposeProject.up(
                compose_source,
                spec.network_mode,
                remaining(deadline, "(compose)"),
                name=compose_project,
                labels=dict(spec.labels),
                fence=None if fence is None else fence.network,
            )
        try:
            container = AttemptContainer.start(_with_compose(spec, compose))
        except BaseException:
            if compose is not None:
                compose.down()
            raise
        environment = cls(container=container, compose=compose, fence=fence)
        try:
            if compose is not None:
                compose.attach(environment.container.id)
            if prepare is not None:
                prepare(environment, deadline)
        except BaseException:
            environment.close()
            raise
        return environment

    def close(self) -> None:
        self.container.remove()
        if self.compose is not None:
            self.compose.down()
        if self.fence is not None:
            self.fence.close()

    def close_later(self) -> None:
        """`close` in the background, once nothing more is read from the environment (see
        `container.in_background`)."""
        in_background(self.close)


def _with_compose(spec: ContainerSpec, compose: ComposeProject | None) -> ContainerSpec:
    if compose is None:
        return spec
    network_mode, _ = compose.agent_network()
    if network_mode is not None:
        return dataclasses.replace(spec, network_mode=network_mode, network=None)
    if compose.fence is not None:  # on the fence network, rejoined with the alias `main`
        return dataclasses.replace(spec, network_mode=None, network=compose.fence)
    # Joined to the project network (alias `main`) right after it starts.
    return dataclasses.replace(spec, network_mode=None, network=None)
