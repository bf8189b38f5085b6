"""The integration phase's file order names real files, each once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.conftest import LONGEST_FIRST

pytestmark = pytest.mark.unit

INTEGRATION = Path(__file__).resolve().parents[2] / "integration"


def test_every_file_the_order_names_exists_and_is_named_once() -> None:
    missing = [name for name in LONGEST_FIRST if not (INTEGRATION / name).is_file()]
    assert missing == []
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
