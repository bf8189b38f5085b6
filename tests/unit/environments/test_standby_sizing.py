"""Placeholders for scoring namespaces start only while the engine has CPU to spare."""

from __future__ import annotations

import pytest

from agevalx.environments.standby import Network, Standby

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("concurrent", "cores", "enabled"),
    [(1, 2, True), (2, 2, False), (4, 2, False), (1, 1, True), (4, 8, True), (5, 8, False)],
)
def test_placeholders_start_while_at_most_half_the_cores_of_attempts_run(
    concurrent: int, cores: int, enabled: bool
) -> None:
    pool = Standby()
    pool.size_for(concurrent, cores=cores)
    assert pool.enabled is enabled


def test_a_pool_that_is_off_expects_nothing_and_hands_out_nothing() -> None:
    pool = Standby()
    pool.size_for(4, cores=2)
    network = Network(name=None, host_gateway=True)
    pool.expect(network)  # would start a placeholder container if it were on
    assert pool.take(network) is None
    assert not pool._ready.get(network)
