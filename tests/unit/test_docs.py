"""What the docs must say (security-relevant statements a reader relies on)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_datasets_page_says_run_py_is_sandboxed_unless_trusted() -> None:
    text = (DOCS / "datasets-and-tasks.md").read_text(encoding="utf-8")
    section = text.split("## run.py", 1)[1].split("\n## ", 1)[0]
    assert "**run.py runs in a sandbox.**" in section
    assert (
        "--trust-run-py" in section and "**dangerous with a dataset you did not write**" in section
    )
