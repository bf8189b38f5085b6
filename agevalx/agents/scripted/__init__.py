"""The deterministic scripted ACP agent shipped with ageval (for tests, demos and examples).

`agent.py` beside this file is the agent itself: one standard-library file that runs with
any python3 >= 3.7 inside the attempt container. This module holds the host-side helpers:
its source, and the conversion of a task's YAML or JSON script to the JSON it reads.
"""

from __future__ import annotations

import json
import os
from pathlib import Path, PurePosixPath

from agevalx.agents.scripted.agent import ScriptError, turns_of
from agevalx.config.loading import read_yaml
from agevalx.errors import ConfigError

ENTRY = "ageval-scripted-agent"
"""The profile entry that selects the scripted agent."""

_AGENT_FILE = Path(__file__).with_name("agent.py")


def agent_source() -> bytes:
    """The agent program's source."""
    return _AGENT_FILE.read_bytes()


def script_path(task_dir: Path, script: object) -> Path:
    """`options.script` as a path inside the task directory; `ValueError` saying why not (not
    a relative path, `..`, or a symbolic link leading out of the task)."""
    if not isinstance(script, str) or not script or "\x00" in script or "\\" in script:
        raise ValueError(f"options.script must be a path relative to the task, not {script!r}")
    relative = PurePosixPath(script)
    if relative.is_absolute() or ".." in relative.parts:
        raise ValueError(f"options.script {script!r} must be relative and stay inside the task")
    path = task_dir / relative
    if not Path(os.path.realpath(path)).is_relative_to(os.path.realpath(task_dir)):
        raise ValueError(f"options.script {script!r} leads outside the task (a symbolic link)")
    return path


def script_json(path: Path, display: str | None = None) -> bytes:
    """The script at `path` (YAML or JSON) as JSON, read within the config budgets (size,
    nesting, values: an alias bomb is refused, not expanded) and checked as the agent checks
    it (step types, value shapes); `ValueError` when it cannot be read or is malformed.
    `display` names the file in the message."""
    shown = display or str(path)
    try:
        document = read_yaml(path, display=shown, lists=True)
        turns_of(document)
    except ConfigError as exc:
        where = f" at {exc.field}" if exc.field else ""
        raise ValueError(f"the agent script {shown}{where}: {exc.message}") from None
    except ScriptError as exc:
        raise ValueError(f"the agent script {shown}: {exc}") from None
    return json.dumps(document, ensure_ascii=False, indent=1).encode()
