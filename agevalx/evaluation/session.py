"""The scoring session: what a verifier gets to score one run, whatever the task format.

It offers the attempt's final filesystem as fresh containers (the run's committed image, or,
where this engine no longer has it, the task image with the cached workspace and home
restored), or, with `evaluate_host.isolated: true`, a fresh scoring host holding only the
harvested workspace; in both, the `evaluation.collect` copies at their paths. It also offers
the images the task scores in, and a way to start further containers. Every container it
starts is labelled with the attempt and removed when the session closes.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agevalx.environments.container import (
    ATTEMPT_LABEL,
    AttemptContainer,
    ContainerSpec,
    TrustedPython,
)
from agevalx.environments.engine import LABEL, EnvironmentFailure, image_exists
from agevalx.environments.standby import Network, joined, standby
from agevalx.lockfile.models import TaskLock
from agevalx.runner.collect import place
from agevalx.runner.output import CollectFailure

if TYPE_CHECKING:
    from agevalx.gateway.recording import TrafficLog

Restore = Callable[[AttemptContainer], None]
"""Puts an attempt's cached snapshots into a container of the task image."""
RestoreTree = Callable[[Path], None]
"""Puts a cached tree into an empty directory on the host."""


@dataclass(frozen=True)
class RunFacts:
    """What the scored run tells its verifier."""

    limit: str | None = None
    """The run-stage quota that ran out."""
    invocations: int | None = None
    """Agent invocations made."""
    workdir: str | None = None
    """The agent's working directory."""


@dataclass
class ScoringSession:
    """One evaluation's scoring environment (see the module docstring)."""

    lock: TaskLock
    task_dir: Path
    attempt_id: str
    """Labels every container, so an interrupted run's leftovers can be found."""
    run: RunFacts
    attempt_image: str | None
    """The image of the attempt's final filesystem (None: none was committed)."""
    task_image: str | None = None
    """The task's image, which `restore` fills when `attempt_image` is gone."""
    restore: Restore | None = None
    scoring_images: dict[str, str] = field(default_factory=dict)
    """Images the task scores in besides the attempt's, by name (its `scoring_image` nodes)."""
    trials_dir: Path | None = None
    """Where verifiers that keep files on the host (verifier classes run there) write them."""
    cache_dir: Path | None = None
    """The cache in use (the evaluator's runtime is kept beside it)."""
    artifacts: RestoreTree | None = None
    """Puts the artifacts collected after the run into an empty directory (None: none were
    collected, as for a replay: take them from `attempt_container`)."""
    host_image: str | None = None
    """The isolated scoring host's image (its `scoring_host` node); None: not isolated."""
    restore_workspace: Restore | None = None
    """Puts only the harvested workspace into a scoring host."""
    collected: RestoreTree | None = None
    """Puts the `evaluation.collect` copies into an empty directory (None: nothing collected)."""
    environment_image: Callable[[str], str] | None = None
    """The image of a scoring host of `evaluation.environments`, by name (raises
    `scoring_host_unavailable`)."""
    collect_failure: CollectFailure | None = None
    """The collect entry that failed in the run stage: the evaluation is an ERROR."""
    judge_traffic: TrafficLog | None = None
    """Where the verifier's LLM judges' requests and responses are recorded
    (`judge-model.jsonl`), if anywhere."""
    _started: list[AttemptContainer] = field(default_factory=list)

    def attempt_container(
        self, base: ContainerSpec | None = None, *, full_filesystem: bool = False
    ) -> AttemptContainer:
        """A fresh container holding the attempt's final filesystem, started from `base`'s
        settings (its image is replaced). `full_filesystem`: files outside the workspace and
        home matter, so the snapshots of those two are not enough."""
        spec = base or ContainerSpec(image="", name_hint=f"eval-{self.attempt_id}")
        if self.attempt_image is not None and image_exists(self.attempt_image):
            return self._start_first(dataclasses.replace(spec, image=self.attempt_image))
        if full_filesystem or self.task_image is None or self.restore is None:
            raise EnvironmentFailure(
                "run_image_missing",
                "the attempt's container image is gone from this Docker engine, so its files "
                "cannot be scored",
                hint="run the attempt again with --fresh",
            )
        container = self._start_first(dataclasses.replace(spec, image=self.task_image))
        self.restore(container)
        return container

    def one_shot_container(self, spec: ContainerSpec) -> AttemptContainer | None:
        """A created, not yet started, container of the attempt's committed image (which the
        caller found on this engine) that will run `spec.command` and end
        (`AttemptContainer.run_attached`), when nothing must be put in place by a command
        first: the scoring is not isolated, and no `evaluation.collect` copies are placed.
        None otherwise: use `scoring_container`."""
        if self.host_image is not None or self.attempt_image is None:
            return None
        if self.collected is not None and self.lock.task.evaluation.collect:
            return None
        return self._start_first(dataclasses.replace(spec, image=self.attempt_image), start=False)

    def scoring_container(self, base: ContainerSpec, python: TrustedPython) -> AttemptContainer:
        """The container an evaluator scores in: a fresh scoring host with the harvested
        workspace when isolated, else `attempt_container`; then the collected paths, placed
        with the help of `python` (the evaluator's, which runs in it)."""
        if self.host_image is None:
            container = self.attempt_container(base)
        else:
            container = self._start_first(dataclasses.replace(base, image=self.host_image))
            if self.restore_workspace is not None:
                self.restore_workspace(container)
        if self.collected is not None and self.lock.task.evaluation.collect:
            with tempfile.TemporaryDirectory(prefix="ageval-collected-") as scratch:
                local = Path(scratch) / "collected"
                self.collected(local)
                place(container, self.lock.task.evaluation.collect, local, python)
        return container

    def check_collection(self) -> None:
        """Raise the run stage's `evaluation.collect` failure, if any: that evaluation is an
        ERROR whose code and field name the entry."""
        failure = self.collect_failure
        if failure is not None:
            raise EnvironmentFailure(
                failure.code,
                failure.message,
                file=f"{self.lock.task_id}/task.yaml",
                field=failure.entry,
                hint="fix the entry in task.yaml (that re-runs the attempt), or use --fresh",
            )

    def start(self, spec: ContainerSpec, *, start: bool = True) -> AttemptContainer:
        """Start a container for scoring (labelled; removed when the session closes);
        `start` False: only create it (see `AttemptContainer.create`)."""
        labels = (*spec.labels, (ATTEMPT_LABEL, self.attempt_id), (LABEL, "scoring"))
        labelled = dataclasses.replace(spec, labels=labels)
        container = AttemptContainer.start(labelled) if start else AttemptContainer.create(labelled)
        self._started.append(container)
        return container

    def _start_first(self, spec: ContainerSpec, *, start: bool = True) -> AttemptContainer:
        """`start` the container the verifier scores in: in a network namespace the run
        stage had started for it (`environments.standby`), when one is ready on the spec's
        network, else as any other."""
        network = Network.of(spec)
        placeholder = standby().take(network) if network is not None else None
        if placeholder is None:
            return self.start(spec, start=start)
        try:
            container = self.start(joined(spec, placeholder), start=start)
        except EnvironmentFailure:  # the placeholder is gone: start on our own
            placeholder.remove_later()
            return self.start(spec, start=start)
        container.network_owner = placeholder
        return container

    def scoring_image(self, name: str) -> str:
        found = self.scoring_images.get(name)
        if found is None:
            raise EnvironmentFailure(
                "scoring_image_missing", f"the task has no scoring image {name!r}"
            )
        return found

    def discard(self, container: AttemptContainer, *, later: bool = False) -> None:
        """Remove a container before the session ends (e.g. between verification tries);
        `later`: in the background, once nothing is read from it any more and no network
        waits for it to go (see `container.in_background`)."""
        if container in self._started:
            self._started.remove(container)
        if later:
            container.remove_later()
        else:
            container.remove()

    def close(self) -> None:
        for container in self._started:
            container.remove()
        self._started.clear()
