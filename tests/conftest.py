"""Suite-wide fixtures: every test gets its own ageval cache directory."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    cache = tmp_path_factory.mktemp("ageval-cache")
    monkeypatch.setenv("AGEVAL_CACHE_DIR", str(cache))
    return cache
