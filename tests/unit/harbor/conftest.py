"""Fixtures of the Harbor unit tests (builders live in builders.py)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.unit.harbor.builders import BASE_TOML, TaskFactory, write_task


@pytest.fixture
def make_task(tmp_path: Path) -> TaskFactory:
    """`make_task(name, toml=..., files=..., root=...)`: one task under tmp_path/dataset."""

    def make(
        name: str = "demo",
        toml: str = BASE_TOML,
        files: Mapping[str, str | None] | None = None,
        root: Path | None = None,
    ) -> Path:
        return write_task(root or tmp_path / "dataset", name, toml, files)

    return make
