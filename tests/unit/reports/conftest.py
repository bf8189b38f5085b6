"""Fixtures of the report tests: result files on disk (see builders.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.reports.builders import mixed_results, write_results


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """A dataset directory holding `mixed_results()` (no job summary)."""
    root = tmp_path / "dataset"
    write_results(root, mixed_results())
    return root
