"""Suite-wide fixtures: every test gets its own ageval cache directory and state directory
(crash reports, plan memos)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    cache = tmp_path_factory.mktemp("ageval-cache")
    monkeypatch.setenv("AGEVAL_CACHE_DIR", str(cache))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("ageval-state")))
    return cache
