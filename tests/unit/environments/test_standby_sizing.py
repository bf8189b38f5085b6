"""Placeholders for scoring namespaces start only while the engine has CPU to spare."""

from __future__ import annotations

import pytest

from agevalx.environments import owners
from agevalx.environments.owners import this_process
from agevalx.environments.standby import SETTING, Network, Standby
from agevalx.errors import UsageError

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("concurrent", "cores", "enabled"),
    [(1, 2, True), (2, 2, False), (4, 2, False), (1, 1, True), (4, 8, True), (5, 8, False)],
)
def test_placeholders_start_while_at_most_half_the_cores_of_attempts_run(
    concurrent: int, cores: int, enabled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SETTING, raising=False)
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


@pytest.mark.parametrize(("setting", "others", "enabled"), [
    (None, 0, True), ("auto", 0, True), (None, 1, False), ("auto", 3, False),
    ("on", 3, True), ("off", 0, False),
])  # fmt: skip
def test_other_ageval_processes_on_the_engine_turn_placeholders_off_unless_told(
    setting: str | None, others: int, enabled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if setting is None:
        monkeypatch.delenv(SETTING, raising=False)
    else:
        monkeypatch.setenv(SETTING, setting)
    pool = Standby()
    pool.size_for(1, cores=2, others=others)
    assert pool.enabled is enabled


def test_a_malformed_setting_is_a_coded_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SETTING, "yes")
    with pytest.raises(UsageError) as raised:
        Standby().size_for(1, cores=2)
    assert (raised.value.code, raised.value.field) == ("invalid_standby_setting", SETTING)


class _Engine:
    """Answers the one listing `other_owners` asks for."""

    def __init__(self, running: list[dict[str, object]]) -> None:
        self.api = self
        self.running = running
        self.asked: list[dict[str, object]] = []

    def containers(self, filters: dict[str, object]) -> list[dict[str, object]]:
        self.asked.append(filters)
        return self.running


def test_other_owners_counts_the_processes_with_running_containers_but_this_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    me = this_process().labels()
    other = {**me, owners.OWNER_PID: "4242424"}
    elsewhere = {**me, owners.OWNER_HOST: "another-host"}
    running = [
        {"Labels": me},
        {"Labels": me},
        {"Labels": other},
        {"Labels": other},
        {"Labels": elsewhere},
        {"Labels": {owners.OWNER_PID: "12"}},  # no host: names no owner
    ]
    engine = _Engine(running)
    monkeypatch.setattr(owners, "client", lambda: engine)
    assert owners.other_owners() == 2
    assert engine.asked == [{"label": owners.OWNER_PID, "status": "running"}]
