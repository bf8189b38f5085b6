"""The environment stage of an attempt: compose sidecars, the attempt container, task data and
environment/setup.sh, all within `limits.environment_seconds`."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

from agevalx.environments.compose import ComposeProject, compose_file
from agevalx.environments.container import PRIVATE, WORKSPACE, AttemptContainer, ContainerSpec
from agevalx.environments.engine import EnvironmentFailure, client


def _check_gpus(spec: ContainerSpec) -> None:
    if not spec.gpus:
        return
    if "nvidia" not in client().info().get("Runtimes", {}):
        raise EnvironmentFailure(
            "environment_gpu_unavailable",
            f"the task needs {spec.gpus} GPU(s) and this Docker engine has none",
            hint="run on a machine with GPUs and the NVIDIA container runtime",
        )


def _remaining(deadline: float, what: str) -> float:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise EnvironmentFailure("environment_timeout", f"environment_seconds ran out {what}")
    return remaining


@dataclass
class AttemptEnvironment:
    """A started attempt: its container and, when the task has one, its compose project."""

    container: AttemptContainer
    compose: ComposeProject | None = None

    @classmethod
    def start(cls, spec: ContainerSpec, task_dir: Path, seconds: float) -> AttemptEnvironment:
        deadline = time.monotonic() + seconds
        _check_gpus(spec)
        source = compose_file(task_dir)
        if source is None and spec.network_mode and spec.network_mode.startswith("service:"):
            raise EnvironmentFailure(
                "compose_missing",
                f"network_mode {spec.network_mode} needs environment/compose.yaml",
            )
        compose = None
        if source is not None:
            compose = ComposeProject.up(
                source, spec.network_mode, _remaining(deadline, "(compose)")
            )
        environment = cls(
            container=AttemptContainer.start(_with_compose(spec, compose)), compose=compose
        )
        try:
            if compose is not None:
                compose.attach(environment.container.id)
            environment._prepare(task_dir, deadline)
        except BaseException:
            environment.close()
            raise
        return environment

    def _prepare(self, task_dir: Path, deadline: float) -> None:
        if (task_dir / "data").is_dir():
            self.container.put_directory(task_dir / "data", f"{WORKSPACE}/data")
        setup = task_dir / "environment" / "setup.sh"
        if not setup.is_file():
            return
        self.container.put_files(PRIVATE, {"setup.sh": (setup.read_bytes(), 0o755)})
        result = self.container.exec(
            f"sh {PRIVATE}/setup.sh", timeout=_remaining(deadline, "before setup.sh")
        )
        if result.timed_out or time.monotonic() > deadline:
            raise EnvironmentFailure(
                "environment_timeout", "environment/setup.sh outlived environment_seconds"
            )
        if result.exit_code != 0:
            raise EnvironmentFailure(
                "setup_failed",
                f"environment/setup.sh exited with {result.exit_code}",
                hint=result.output.strip()[-500:] or None,
            )

    def close(self) -> None:
        self.container.remove()
        if self.compose is not None:
            self.compose.down()


def _with_compose(spec: ContainerSpec, compose: ComposeProject | None) -> ContainerSpec:
    if compose is None:
        return spec
    network_mode, _ = compose.agent_network()
    if network_mode is not None:
        return dataclasses.replace(spec, network_mode=network_mode, network=None)
    # Joined to the project network (alias `main`) right after it starts.
    return dataclasses.replace(spec, network_mode=None, network=None)
