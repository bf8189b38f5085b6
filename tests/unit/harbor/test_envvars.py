"""Which env values came from the host (and so may be secrets to mask)."""

from __future__ import annotations

import pytest

from agevalx.formats.harbor.envvars import from_host

pytestmark = pytest.mark.unit

HOST = {"API_KEY": "sk-1", "EMPTY": ""}


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("${API_KEY}", True),
        ("${API_KEY:-fallback}", True),  # set on the host: the host's value is used
        ("${EMPTY}", True),  # set means set, even when empty
        ("${UNSET:-strict}", False),  # the default is as literal as the file
        ("good-judge", False),
        ("${API_KEY}-suffix", False),  # only a whole value is a template (Harbor's rule)
    ],
)
def test_only_a_template_taking_a_set_host_variable_is_from_the_host(
    written: str, expected: bool
) -> None:
    assert from_host(written, HOST) is expected
