"""Builders of small Harbor tasks on disk (no Docker), shared by the Harbor unit tests."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

TaskFactory = Callable[..., Path]

BASE_TOML = """\
[agent]
timeout_sec = 120.0

[environment]
docker_image = "ageval/base:bookworm"
"""

TEST_SH = "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n"


def write_task(
    root: Path,
    name: str,
    toml: str = BASE_TOML,
    files: Mapping[str, str | None] | None = None,
) -> Path:
    """A valid task `root/name`; `files` adds or replaces files (None leaves one out)."""
    directory = root / name
    contents: dict[str, str | None] = {
        "task.toml": toml,
        "instruction.md": f"Do {name}.\n",
        "tests/test.sh": TEST_SH,
        "solution/solve.sh": "#!/bin/bash\ntrue\n",
        **(files or {}),
    }
    for relative, text in contents.items():
        if text is None:
            continue
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return directory
