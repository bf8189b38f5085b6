"""The deterministic scripted ACP agent shipped with ageval (for tests, demos and examples).

`agent.py` beside this file is the agent itself: one standard-library file that runs with
any python3 >= 3.7 inside the attempt container. This module holds the host-side helpers:
its source, and the conversion of a task's YAML or JSON script to the JSON it reads.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

ENTRY = "ageval-scripted-agent"
"""The profile entry that selects the scripted agent."""

_AGENT_FILE = Path(__file__).with_name("agent.py")


def agent_source() -> bytes:
    """The agent program's source."""
    return _AGENT_FILE.read_bytes()


def script_json(path: Path) -> bytes:
    """The script at `path` (YAML or JSON) as JSON; `ValueError` when it cannot be read."""
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"cannot read the agent script {path}: {exc}") from exc
    if not isinstance(document, dict | list):
        raise ValueError(f"the agent script {path} is not a mapping or a list of steps")
    return json.dumps(document, ensure_ascii=False, indent=1).encode()
