"""Harbor-format datasets: load tasks, verify attempts and score them as Harbor does.

See docs/harbor.md. The public API:

- `load_harbor_tasks`, `is_harbor_task` (loader): resolved `HarborTaskSpec`s + warnings.
- `run_verifier`, `healthcheck` (verifier): run on an `AttemptContainer`.
- `prepare_environment`, `container_spec`, `collect_artifacts` (sandbox).
- `image_workdir` (images).

The format adapter that runs Harbor tasks through ageval's one attempt pipeline is
`agevalx/formats/harbor.py`.
- `score_outcome`, `aggregate_task`, ... (scoring): pure scoring functions.
"""

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
