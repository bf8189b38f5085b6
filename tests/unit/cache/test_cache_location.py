"""Where the cache lives: flag, then AGEVAL_CACHE_DIR, then XDG, then ~/.cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from agevalx.cache import default_cache_dir, resolve_cache_dir

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AGEVAL_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def test_default_is_under_the_home_cache(tmp_path: Path) -> None:
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "ageval"


def test_xdg_cache_home_is_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "ageval"


def test_relative_xdg_cache_home_is_ignored(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "ageval"


def test_env_var_beats_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("AGEVAL_CACHE_DIR", str(tmp_path / "env"))
    assert default_cache_dir() == tmp_path / "env"


def test_flag_beats_env_var(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AGEVAL_CACHE_DIR", str(tmp_path / "env"))
    assert resolve_cache_dir(str(tmp_path / "flag")) == tmp_path / "flag"
    assert resolve_cache_dir(None) == tmp_path / "env"
