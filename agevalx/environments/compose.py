"""Compose sidecars: `environment/compose.yaml` services started with `docker compose up -d`.

The agent container is not a compose service: it is started by ageval and joined to the
project's network with the alias `main`. `depends_on` entries naming `main` are dropped for
this `up`, and healthchecks are not awaited. A `main` service in the file (or the task's or
profile's `network_mode: service:<name>`) makes the agent container share that service's
network namespace instead, and then no alias is registered.
"""

from __future__ import annotations

import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from agevalx.environments.engine import LABEL, EnvironmentFailure, client
from agevalx.environments.owners import made_labels

COMPOSE_FILES = ("compose.yaml", "docker-compose.yaml", "compose.yml", "docker-compose.yml")
MAIN = "main"


def compose_file(task_dir: Path) -> Path | None:
    for name in COMPOSE_FILES:
        path = task_dir / "environment" / name
        if path.is_file():
            return path
    return None


def _without_main(document: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Drop the `main` service (its network_mode is returned) and dependencies on it."""
    services = dict(document.get("services") or {})
    main = services.pop(MAIN, None) or {}
    for name, service in services.items():
        if not isinstance(service, dict):
            continue
        depends = service.get("depends_on")
        if isinstance(depends, list):
            service = {**service, "depends_on": [d for d in depends if d != MAIN]}
        elif isinstance(depends, dict):
            service = {**service, "depends_on": {k: v for k, v in depends.items() if k != MAIN}}
        if not service.get("depends_on"):
            service.pop("depends_on", None)
        services[name] = service
    network_mode = main.get("network_mode") if isinstance(main, dict) else None
    return {**document, "services": services}, network_mode


def _label_map(labels: Any) -> dict[str, str]:
    """A compose `labels` value (a mapping, or a list of `key=value`) as a mapping."""
    if isinstance(labels, dict):
        return {str(key): "" if value is None else str(value) for key, value in labels.items()}
    if isinstance(labels, list):
        return {key: value for key, _, value in (str(item).partition("=") for item in labels)}
    return {}


def _labelled(document: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    """`labels` added to every service, network and volume the project creates (the default
    network included), so a killed run's sidecars can be found and removed by their owner."""

    def merged(entry: Any) -> dict[str, Any]:
        result: dict[str, Any] = dict(entry) if isinstance(entry, dict) else {}
        if not result.get("external"):
            result["labels"] = {**_label_map(result.get("labels")), **labels}
        return result

    services = {
        name: merged(service) if isinstance(service, dict) else service
        for name, service in (document.get("services") or {}).items()
    }
    networks = {name: merged(n) for name, n in (document.get("networks") or {}).items()}
    networks.setdefault("default", merged({}))
    volumes = {name: merged(v) for name, v in (document.get("volumes") or {}).items()}
    labelled = {**document, "services": services, "networks": networks}
    if volumes:
        labelled["volumes"] = volumes
    return labelled


FENCE_NETWORK = "ageval_fence"
"""The key of the `egress: llm` fence network in a fenced project's compose file."""


def _fenced(document: dict[str, Any], fence: str) -> dict[str, Any]:
    """Every service also on the fence network `fence` (an internal network ageval made): the
    fenced attempt container, on that network only, reaches them by their names, and they
    reach it as `main`; each keeps its own networks for everything else. A service sharing
    another's network namespace (`network_mode`) is on that one's networks already."""
    services = {}
    for name, service in (document.get("services") or {}).items():
        if isinstance(service, dict) and not service.get("network_mode"):
            networks = service.get("networks")
            if isinstance(networks, dict):
                service = {**service, "networks": {**networks, FENCE_NETWORK: None}}
            else:
                listed = list(networks) if isinstance(networks, list) else ["default"]
                service = {**service, "networks": [*listed, FENCE_NETWORK]}
        services[name] = service
    networks = {
        **(document.get("networks") or {}),
        FENCE_NETWORK: {"external": True, "name": fence},
    }
    return {**document, "services": services, "networks": networks}


def project_name() -> str:
    """A fresh, unique compose project name."""
    return f"ageval-{uuid.uuid4().hex[:12]}"


def _compose(project: str, directory: Path, file: Path, *args: str, timeout: float) -> str:
    command = ["docker", "compose", "-p", project, "--project-directory", str(directory)]
    try:
        done = subprocess.run(
            [*command, "-f", str(file), *args],
            capture_output=True,
            text=True,
            timeout=max(1.0, timeout),
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise EnvironmentFailure(
            "environment_timeout", f"docker compose {args[0]} outlived environment_seconds"
        ) from None
    except FileNotFoundError:
        raise EnvironmentFailure("compose_unavailable", "the docker CLI is not installed") from None
    if done.returncode != 0:
        raise EnvironmentFailure(
            "compose_failed",
            f"docker compose {args[0]} failed (exit {done.returncode})",
            hint=(done.stderr or done.stdout).strip()[-800:] or None,
        )
    return done.stdout


@dataclass
class ComposeProject:
    """A running compose project of one attempt."""

    name: str
    directory: Path
    file: Path
    network_mode: str | None
    _scratch: tempfile.TemporaryDirectory[str]
    fence: str | None = None
    """The `egress: llm` fence network the attempt container sits on instead of the
    project's own network (which reaches the outside)."""

    @classmethod
    def up(
        cls,
        source: Path,
        network_mode: str | None,
        timeout: float,
        *,
        name: str | None = None,
        labels: dict[str, str] | None = None,
        fence: str | None = None,
    ) -> ComposeProject:
        """`docker compose up -d` of `source` as project `name` (generated when None); its
        containers, networks and volumes carry `labels` and this process's owner labels.
        With `fence` (the `egress: llm` fence network), every service joins it too."""
        document = yaml.safe_load(source.read_text(encoding="utf-8")) or {}
        if not isinstance(document, dict):
            raise EnvironmentFailure("compose_failed", f"{source.name} is not a mapping")
        cleaned, main_mode = _without_main(document)
        if fence is not None and (network_mode or main_mode):
            raise EnvironmentFailure(
                "egress_network_mode_unfenced",
                f"egress: llm cannot fence an attempt container that shares a compose "
                f"service's network (network_mode: {network_mode or main_mode})",
                field="environment_options.egress",
                hint="drop network_mode (the agent then reaches the services by name), or "
                "use egress: open",
            )
        cleaned = _labelled(cleaned, {LABEL: "compose", **(labels or {}), **made_labels()})
        if fence is not None:
            cleaned = _fenced(cleaned, fence)
        scratch = tempfile.TemporaryDirectory(prefix="ageval-compose-")
        file = Path(scratch.name) / "compose.yaml"
        file.write_text(yaml.safe_dump(cleaned, sort_keys=True), encoding="utf-8")
        project = cls(
            name=name or project_name(),
            directory=source.parent,
            file=file,
            network_mode=network_mode or main_mode,
            _scratch=scratch,
            fence=fence,
        )
        try:
            _compose(project.name, project.directory, file, "up", "-d", timeout=timeout)
        except BaseException:
            project.down()
            raise
        return project

    def service_container(self, service: str) -> str:
        output = _compose(self.name, self.directory, self.file, "ps", "-q", service, timeout=60)
        ids = output.split()
        if not ids:
            raise EnvironmentFailure(
                "compose_failed", f"compose service {service!r} is not running"
            )
        return ids[0]

    def agent_network(self) -> tuple[str | None, str | None]:
        """(network_mode, network) for the agent container."""
        if self.network_mode and self.network_mode.startswith("service:"):
            service = self.network_mode.split(":", 1)[1]
            return f"container:{self.service_container(service)}", None
        return None, self.fence or f"{self.name}_default"

    def attach(self, container_id: str) -> None:
        """Join the agent container to the project network with the alias `main` (behind a
        fence: rejoin the fence network with it, and no other network)."""
        if self.network_mode:
            return
        if self.fence is not None:
            network = client().networks.get(self.fence)
            network.disconnect(container_id)
        else:
            network = client().networks.get(f"{self.name}_default")
        network.connect(container_id, aliases=[MAIN])

    def down(self) -> None:
        try:
            _compose(
                self.name,
                self.directory,
                self.file,
                "down",
                "-v",
                "--remove-orphans",
                "-t",
                "1",
                timeout=120,
            )
        except EnvironmentFailure:
            pass
        finally:
            self._scratch.cleanup()
