"""Load a Harbor task with a job config and verify one solved attempt, through the library.

Run by tests/integration/harbor/test_plugin_verifier.py with a Python >= 3.12 that has
harbor, agevalx and verifier-project installed:

    python verify_in_venv.py <task_dir> <job config JSON> <trial_root>

Prints one JSON object: {"error": {...}} when loading refuses the job (no container is
started), else {"outcome": {...}} (the `VerifierOutcome`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from agevalx.environments.container import AttemptContainer
from agevalx.formats.harbor import (
    HarborError,
    container_spec,
    image_workdir,
    load_harbor_tasks,
    prepare_environment,
    run_verifier,
)


def main(task_dir: str, job_config: str, trial_root: str) -> dict[str, object]:
    try:
        spec = load_harbor_tasks(Path(task_dir), json.loads(job_config), environ={}).tasks[0]
    except HarborError as exc:
        return {"error": exc.to_dict()}
    assert spec.image is not None, "the plugin task names a prebuilt image"
    workdir = spec.workdir or image_workdir(spec.image) or "/"
    container = AttemptContainer.start(container_spec(spec, spec.image, f"plugin-{spec.name}"))
    try:
        prepare_environment(container, spec, workdir=workdir)
        container.put_directory(spec.dir / "solution", "/solution")
        container.exec("bash /solution/solve.sh", workdir=workdir)
        outcome = run_verifier(container, spec, workdir=workdir, trial_root=Path(trial_root))
    finally:
        container.remove()
    return {"outcome": outcome.model_dump(mode="json")}


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:4])))
