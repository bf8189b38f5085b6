"""Matching a GPU request against an engine's devices (recorded device lists, no Docker)."""

from __future__ import annotations

import pytest

from agevalx.environments import gpus
from agevalx.environments.engine import EnvironmentFailure

pytestmark = pytest.mark.unit

DGX = ["NVIDIA A100-SXM4-80GB"] * 8
MIXED = ["NVIDIA GeForce RTX 4090", "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"]


def test_no_gpus_asked_for_is_always_met() -> None:
    assert gpus.unmet_request(0, ["A100"], []) is None


def test_any_type_is_met_by_enough_devices() -> None:
    assert gpus.unmet_request(8, None, DGX) is None
    assert gpus.unmet_request(9, None, DGX) == (
        "9 GPU(s) are needed; this engine offers 8: NVIDIA A100-SXM4-80GB"
    )


def test_types_match_a_substring_of_the_device_name_in_any_case() -> None:
    assert gpus.unmet_request(2, ["h100"], MIXED) is None
    assert gpus.unmet_request(2, ["a100", "H100"], MIXED) is None
    problem = gpus.unmet_request(2, ["4090"], MIXED)
    assert problem is not None and "of type 4090" in problem and "RTX 4090" in problem


def test_an_engine_without_gpus_says_so() -> None:
    assert (
        gpus.unmet_request(1, ["A100"], []) == "1 GPU(s) are needed and this Docker engine has none"
    )


def test_an_unmet_request_is_environment_gpu_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpus, "available_gpus", lambda: tuple(MIXED))
    gpus.check_gpus(1, ["H100"], what="the attempt")
    with pytest.raises(EnvironmentFailure) as raised:
        gpus.check_gpus(1, ["A100"], what="the attempt")
    assert raised.value.code == "environment_gpu_unavailable"
    assert raised.value.message.startswith("the attempt: 1 GPU(s) of type A100")


def test_requests_are_checked_in_order_and_name_the_container(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(gpus, "available_gpus", lambda: tuple(MIXED))
    met = gpus.GpuRequest(2, ("H100",), "the attempt container")
    gpus.check_requests([met, gpus.GpuRequest(None), gpus.GpuRequest(0, ("A100",))])
    unmet = gpus.GpuRequest(1, ("A100",), "the scoring container")
    with pytest.raises(EnvironmentFailure) as raised:
        gpus.check_requests([met, unmet])
    assert raised.value.code == "environment_gpu_unavailable"
    assert raised.value.message.startswith("the scoring container: 1 GPU(s) of type A100")
