"""Owner identities: a reused pid, an ended process, another host, older records."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from agevalx.environments.compose import _labelled
from agevalx.environments.owners import (
    OWNER_HOST,
    OWNER_PID,
    OWNER_SCOPE,
    OWNER_START,
    SCOPE_ENV,
    Owner,
    dead_here,
    is_alive,
    process_start,
    reap_orphans,
    this_process,
)
from agevalx.errors import UsageError
from agevalx.runner.recovery import AttemptRecord, process_alive

pytestmark = pytest.mark.unit


def test_this_process_is_alive_and_its_labels_round_trip() -> None:
    me = this_process()
    assert me.pid == os.getpid() and me.host == socket.gethostname() and me.start
    assert Owner.from_labels(me.labels()) == me
    assert is_alive(me) and not dead_here(me.labels())


def test_a_reused_pid_is_not_taken_for_the_owner() -> None:
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]) as sleeper:
        try:
            start = process_start(sleeper.pid)
            assert start is not None
            live = Owner(socket.gethostname(), sleeper.pid, start)
            assert is_alive(live)
            assert not is_alive(Owner(live.host, live.pid, "another-boot:12"))
        finally:
            sleeper.kill()


def _ended_pid() -> int:
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(ended.stdout)


def test_an_ended_process_is_dead_and_other_hosts_are_never_judged() -> None:
    pid = _ended_pid()
    assert process_start(pid) is None
    assert not is_alive(Owner(socket.gethostname(), pid, "x:1"))
    elsewhere = {OWNER_HOST: f"not-{socket.gethostname()}", OWNER_PID: str(pid), OWNER_START: ""}
    assert is_alive(Owner.from_labels(elsewhere))  # type: ignore[arg-type]
    assert not dead_here(elsewhere)


def test_another_machine_with_the_same_host_name_is_never_judged() -> None:
    me = this_process()
    assert me.machine  # this test machine has a machine id
    twin = Owner(me.host, 1 << 22, "x:1", machine="0" * 32)
    assert is_alive(twin) and not dead_here(twin.labels())
    assert not is_alive(Owner(me.host, 1 << 22, "x:1", machine=me.machine))


def test_malformed_or_missing_owner_labels_name_no_owner() -> None:
    assert Owner.from_labels({}) is None
    assert Owner.from_labels({OWNER_HOST: "h", OWNER_PID: "12a"}) is None
    assert not dead_here({"ageval": "attempt"})


def test_a_process_start_parses_a_command_name_with_spaces_and_parentheses(tmp_path) -> None:
    script = tmp_path / "odd) name (x"
    script.write_text("import time; time.sleep(30)\n")
    link = tmp_path / "py) (x y"
    link.symlink_to(sys.executable)
    with subprocess.Popen([str(link), str(script)]) as odd:
        try:
            start = process_start(odd.pid)
            assert start is not None and start.split(":")[-1].isdigit()
        finally:
            odd.kill()


def test_an_attempt_record_with_a_start_identity_is_checked_by_it() -> None:
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]) as sleeper:
        try:
            record = AttemptRecord(
                attempt_id="a-0-000000000000",
                task_id="a",
                attempt=0,
                run_key="k",
                config_digest="d",
                host=socket.gethostname(),
                pid=sleeper.pid,
                process_start=process_start(sleeper.pid),
            )
            assert process_alive(record)
            assert not process_alive(record.model_copy(update={"process_start": "b:1"}))
        finally:
            sleeper.kill()


def test_compose_objects_get_the_labels_except_external_ones() -> None:
    document = {
        "services": {
            "web": {"image": "x", "labels": ["team=a", "flag"]},
            "db": {"image": "y", "labels": {"keep": "1"}},
        },
        "networks": {"back": None, "outside": {"external": True}},
        "volumes": {"data": {}},
    }
    labelled = _labelled(document, {"ageval.owner.pid": "7"})
    assert labelled["services"]["web"]["labels"] == {
        "team": "a",
        "flag": "",
        "ageval.owner.pid": "7",
    }
    assert labelled["services"]["db"]["labels"] == {"keep": "1", "ageval.owner.pid": "7"}
    assert labelled["networks"]["default"]["labels"] == {"ageval.owner.pid": "7"}
    assert labelled["networks"]["back"]["labels"] == {"ageval.owner.pid": "7"}
    assert labelled["networks"]["outside"] == {"external": True}
    assert labelled["volumes"]["data"]["labels"] == {"ageval.owner.pid": "7"}


def test_a_scope_enters_the_labels_only_when_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SCOPE_ENV, raising=False)
    assert OWNER_SCOPE not in this_process().labels()
    monkeypatch.setenv(SCOPE_ENV, "tests.gw1")
    me = this_process()
    assert me.scope == "tests.gw1" and me.labels()[OWNER_SCOPE] == "tests.gw1"
    assert Owner.from_labels(me.labels()) == me


def test_a_reaper_judges_only_the_dead_owners_of_its_own_scope(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dead = Owner(socket.gethostname(), _ended_pid(), "x:1", this_process().machine)
    scoped = Owner(dead.host, dead.pid, dead.start, dead.machine, scope="tests.gw0")
    monkeypatch.delenv(SCOPE_ENV, raising=False)
    assert dead_here(dead.labels())
    assert not dead_here(scoped.labels())  # another scope's leftovers are not this one's
    monkeypatch.setenv(SCOPE_ENV, "tests.gw0")
    assert dead_here(scoped.labels())
    assert not dead_here(dead.labels())
    monkeypatch.setenv(SCOPE_ENV, "tests.gw1")
    assert not dead_here(scoped.labels()) and not dead_here(dead.labels())


@pytest.mark.parametrize("scope", ["has space", "-leading", "x" * 65, "a/b"])
def test_a_malformed_scope_is_a_usage_error_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, scope: str
) -> None:
    monkeypatch.setenv(SCOPE_ENV, scope)
    with pytest.raises(UsageError) as raised:
        this_process()
    assert raised.value.code == "invalid_owner_scope" and raised.value.field == SCOPE_ENV
    assert raised.value.hint


def test_a_reaping_refuses_a_malformed_scope_before_it_asks_the_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(SCOPE_ENV, "has space")
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")  # no engine answers
    with pytest.raises(UsageError) as raised:
        reap_orphans()
    assert raised.value.code == "invalid_owner_scope"
