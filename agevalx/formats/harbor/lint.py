"""How `ageval lint` reads Harbor tasks (`formats.base.LintReading`): task.toml, the
instruction, the loader with templates kept, and the verifier's model judges."""

from __future__ import annotations

from pathlib import Path

from agevalx.errors import AgevalError
from agevalx.formats.base import LintReading
from agevalx.formats.harbor import errors
from agevalx.formats.harbor.envvars import KeepTemplates
from agevalx.formats.harbor.judges import verifier_judges
from agevalx.formats.harbor.loader import load_harbor_tasks
from agevalx.formats.harbor.taskdir import CONFIG, INSTRUCTION, declares_task, strip_canary


def _load(directory: Path) -> object:
    # Templates stay as written: linting reads no host environment.
    return load_harbor_tasks(directory, environ=KeepTemplates())


def _reported_elsewhere(error: AgevalError) -> bool:
    """No image (the images rule says so) and a missing instruction (the instruction rule)."""
    return error.code == errors.NO_IMAGE or (
        error.code == errors.NOT_A_TASK and INSTRUCTION in error.message
    )


READING = LintReading(
    config_file=CONFIG,
    instruction_file=INSTRUCTION,
    declares_task=declares_task,
    load_task=_load,
    instruction_body=strip_canary,
    reported_elsewhere=_reported_elsewhere,
    verifier_judges=verifier_judges,
)
