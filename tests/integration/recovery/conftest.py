"""The recovery tests' shared attempt: one sealed attempt with its cut points, made once per
test process, and a copy of it (dataset and cache) for each test that asks."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.recovery.helpers import KeptAttempt, copy_kept_attempt, make_kept_attempt


@pytest.fixture(scope="session")
def kept_template(tmp_path_factory: pytest.TempPathFactory, docker_engine: object) -> KeptAttempt:
    """Made in a cache and a state folder of its own, with the machine's bundles (as every
    integration test's ageval)."""
    from agevalx.agents.bundles import BUNDLES_ENV
    from tests.integration.conftest import MACHINE_BUNDLES

    root = tmp_path_factory.mktemp("kept-attempt")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGEVAL_CACHE_DIR", str(root / "cache"))
        patch.setenv("XDG_STATE_HOME", str(root / "state"))
        patch.setenv(BUNDLES_ENV, str(MACHINE_BUNDLES))
        return make_kept_attempt(root)


@pytest.fixture
def kept_attempt(
    kept_template: KeptAttempt, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> KeptAttempt:
    """This test's copy of the shared attempt; its ageval uses the copy's cache."""
    kept = copy_kept_attempt(kept_template, tmp_path / "kept")
    monkeypatch.setenv("AGEVAL_CACHE_DIR", str(kept.cache))
    return kept
