"""Harbor-format datasets: load tasks, verify attempts and score them as Harbor does.

See docs/harbor.md. The public API:

- `load_harbor_tasks`, `is_harbor_task` (loader): resolved `HarborTaskSpec`s + warnings.
- `run_verifier`, `healthcheck` (verifier): run on an `AttemptContainer`.
- `prepare_environment`, `container_spec`, `collect_artifacts` (sandbox).
- `image_workdir` (images).

The format adapter that runs Harbor tasks through ageval's one attempt pipeline is
`agevalx/formats/harbor.py`.
- `score_outcome`, `aggregate_task`, ... (scoring): pure scoring functions.

Submodules are imported on first use of a name, so `import agevalx.harbor.options` (which
planning needs) does not load the verifier, the sandbox or the Docker SDK.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agevalx.harbor.errors import HarborError, HarborRunError, HarborWarning, TaskFailure
    from agevalx.harbor.images import image_workdir
    from agevalx.harbor.loader import is_harbor_task, load_harbor_tasks
    from agevalx.harbor.outcomes import (
        HealthcheckResult,
        VerifierOutcome,
        VerifierStatus,
    )
    from agevalx.harbor.sandbox import collect_artifacts, container_spec, prepare_environment
    from agevalx.harbor.scoring import (
        AttemptScore,
        TaskMetrics,
        aggregate_task,
        harbor_pass_at_k,
        score_outcome,
    )
    from agevalx.harbor.spec import HarborJob, HarborTaskSpec, RunOverrides
    from agevalx.harbor.verifier import healthcheck, run_verifier

_LAZY = {
    "AttemptScore": "agevalx.harbor.scoring",
    "HarborError": "agevalx.harbor.errors",
    "HarborJob": "agevalx.harbor.spec",
    "HarborRunError": "agevalx.harbor.errors",
    "HarborTaskSpec": "agevalx.harbor.spec",
    "HarborWarning": "agevalx.harbor.errors",
    "HealthcheckResult": "agevalx.harbor.outcomes",
    "RunOverrides": "agevalx.harbor.spec",
    "TaskFailure": "agevalx.harbor.errors",
    "TaskMetrics": "agevalx.harbor.scoring",
    "VerifierOutcome": "agevalx.harbor.outcomes",
    "VerifierStatus": "agevalx.harbor.outcomes",
    "aggregate_task": "agevalx.harbor.scoring",
    "collect_artifacts": "agevalx.harbor.sandbox",
    "container_spec": "agevalx.harbor.sandbox",
    "harbor_pass_at_k": "agevalx.harbor.scoring",
    "healthcheck": "agevalx.harbor.verifier",
    "image_workdir": "agevalx.harbor.images",
    "is_harbor_task": "agevalx.harbor.loader",
    "load_harbor_tasks": "agevalx.harbor.loader",
    "prepare_environment": "agevalx.harbor.sandbox",
    "run_verifier": "agevalx.harbor.verifier",
    "score_outcome": "agevalx.harbor.scoring",
}

__all__ = [
    "AttemptScore",
    "HarborError",
    "HarborJob",
    "HarborRunError",
    "HarborTaskSpec",
    "HarborWarning",
    "HealthcheckResult",
    "RunOverrides",
    "TaskFailure",
    "TaskMetrics",
    "VerifierOutcome",
    "VerifierStatus",
    "aggregate_task",
    "collect_artifacts",
    "container_spec",
    "harbor_pass_at_k",
    "healthcheck",
    "image_workdir",
    "is_harbor_task",
    "load_harbor_tasks",
    "prepare_environment",
    "run_verifier",
    "score_outcome",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agevalx.harbor' has no attribute {name!r}")
