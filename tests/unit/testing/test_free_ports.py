"""The local Ray cluster's ports: each given once, never one already taken."""

from __future__ import annotations

import socket

import pytest

from agevalx.testing.raycluster import free_ports

pytestmark = pytest.mark.unit


def test_ports_picked_together_are_distinct_and_skip_those_taken() -> None:
    taken = set(free_ports(5))
    before = set(taken)
    ports = free_ports(40, taken)
    assert len(set(ports)) == 40
    assert not before & set(ports)
    assert taken == before | set(ports)  # recorded for the next pick


def test_a_picked_port_is_free_once_returned() -> None:
    (port,) = free_ports(1)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", port))
