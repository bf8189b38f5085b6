"""Harbor-format datasets: load tasks, verify attempts and score them as Harbor does.

See docs/harbor.md. The public API:

- `load_harbor_tasks`, `is_harbor_task` (loader): resolved `HarborTaskSpec`s + warnings.
- `run_verifier`, `healthcheck` (verifier): run on an `AttemptContainer`.
- `prepare_environment`, `container_spec`, `collect_artifacts` (sandbox).
- `image_workdir` (images).

The format adapter that runs Harbor tasks through ageval's one attempt pipeline is
`agevalx/formats/harbor/format.py`.
- `score_outcome`, `aggregate_task`, ... (scoring): pure scoring functions.

Submodules are imported on first use of a name, so `import agevalx.formats.harbor.options` (which
planning needs) does not load the verifier, the sandbox or the Docker SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agevalx.lazy import lazy_names

if TYPE_CHECKING:
    from agevalx.formats.harbor.errors import (
        HarborError,
        HarborRunError,
        HarborWarning,
        TaskFailure,
    )
    from agevalx.formats.harbor.images import image_workdir
    from agevalx.formats.harbor.loader import is_harbor_task, load_harbor_tasks
    from agevalx.formats.harbor.outcomes import (
        HealthcheckResult,
        VerifierOutcome,
        VerifierStatus,
    )
    from agevalx.formats.harbor.sandbox import (
        collect_artifacts,
        container_spec,
        prepare_environment,
    )
    from agevalx.formats.harbor.scoring import (
        AttemptScore,
        TaskMetrics,
        aggregate_task,
        harbor_pass_at_k,
        score_outcome,
    )
    from agevalx.formats.harbor.spec import HarborJob, HarborTaskSpec, RunOverrides
    from agevalx.formats.harbor.verifier import healthcheck, run_verifier

_LAZY = {
    "AttemptScore": "agevalx.formats.harbor.scoring",
    "HarborError": "agevalx.formats.harbor.errors",
    "HarborJob": "agevalx.formats.harbor.spec",
    "HarborRunError": "agevalx.formats.harbor.errors",
    "HarborTaskSpec": "agevalx.formats.harbor.spec",
    "HarborWarning": "agevalx.formats.harbor.errors",
    "HealthcheckResult": "agevalx.formats.harbor.outcomes",
    "RunOverrides": "agevalx.formats.harbor.spec",
    "TaskFailure": "agevalx.formats.harbor.errors",
    "TaskMetrics": "agevalx.formats.harbor.scoring",
    "VerifierOutcome": "agevalx.formats.harbor.outcomes",
    "VerifierStatus": "agevalx.formats.harbor.outcomes",
    "aggregate_task": "agevalx.formats.harbor.scoring",
    "collect_artifacts": "agevalx.formats.harbor.sandbox",
    "container_spec": "agevalx.formats.harbor.sandbox",
    "harbor_pass_at_k": "agevalx.formats.harbor.scoring",
    "healthcheck": "agevalx.formats.harbor.verifier",
    "image_workdir": "agevalx.formats.harbor.images",
    "is_harbor_task": "agevalx.formats.harbor.loader",
    "load_harbor_tasks": "agevalx.formats.harbor.loader",
    "prepare_environment": "agevalx.formats.harbor.sandbox",
    "run_verifier": "agevalx.formats.harbor.verifier",
    "score_outcome": "agevalx.formats.harbor.scoring",
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


__getattr__ = lazy_names(__name__, _LAZY)
