"""What `ageval run` is asked (`RunRequest`): the one value the run, recovery and the API
pass between them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agevalx.lockfile import BindingRequest
from agevalx.operations.job import JobLimits

if TYPE_CHECKING:
    from agevalx.formats.base import FormatOptions


@dataclass(frozen=True)
class RunRequest:
    """What `ageval run` was asked."""

    dataset: Path | None
    """The dataset directory; `None` for a Harbor job config that lists its own tasks."""
    tasks: tuple[str, ...] = ()
    k: int = 1
    binding: BindingRequest = field(default_factory=BindingRequest)
    fresh: bool = False
    workers: int | None = None
    resume: str | None = None
    """Continue this interrupted attempt (keeping its id)."""
    keep_recovery_state: bool = False
    """Keep checkpoints/ (the cut points) after the attempt is sealed."""
    fork: str | None = None
    """Start a new attempt from a cut point of this (kept) attempt."""
    checkpoint: int | None = None
    """With fork: the cut point's seq (see `ageval checkpoints`)."""
    harbor: FormatOptions | None = None
    """A Harbor run's job config, `--env-params`, primary metric and attempt strategy."""
    cluster: str | None = None
    """Run the Docker nodes on this Ray cluster (any address `ray.init` takes)."""
    trust_run_py: bool = False
    """Run a task's run.py in the ageval process (`--trust-run-py`) instead of its sandbox,
    a harness container with no host access (`agevalx.runner.sandbox`)."""
    lint: bool = True
    """Run lint's error-level checks over the planned tasks first (`--no-lint`: not)."""
    limits: JobLimits = field(default_factory=JobLimits)
    """Retries of infrastructure failures, spend limits, how infrastructure failures count."""
