"""Where an ACP executor finds its agent's bundle in an attempt container."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence

import pytest

from agevalx.agents import bundles
from agevalx.agents.acp import bundled
from agevalx.agents.acp.sandbox import (
    CommandResult,
    FileBlob,
    LaunchRequest,
    ProcessSpec,
    Sandbox,
)
from agevalx.agents.base import Container, Invocation
from agevalx.agents.bundlespec import BundleSpec

pytestmark = pytest.mark.unit


class _Probed(Sandbox):
    """A container whose helper commands are answered from `files` and counted."""

    def __init__(self, container: Container, files: Mapping[str, bytes]) -> None:
        super().__init__(container)
        self.files = files
        self.commands: list[list[str]] = []

    def spec(self, request: LaunchRequest) -> ProcessSpec:
        raise AssertionError("no process may start")

    async def put_files(self, directory: str, files: Mapping[str, FileBlob]) -> None:
        raise AssertionError("nothing may be copied")

    async def run(
        self, argv: Sequence[str], *, stdin_data: bytes | None = None, timeout: float = 60.0
    ) -> CommandResult:
        self.commands.append(list(argv))
        data = self.files.get(argv[-1])
        return CommandResult(0, data, b"") if data is not None else CommandResult(1, b"", b"")


def _locate(container: Container, files: Mapping[str, bytes]) -> tuple[str, str, int]:
    sandbox = _Probed(container, files)
    invocation = Invocation(
        role="solver",
        prompt="",
        profile={"executor": "acp", "options": {"entry": "pi"}},
        container=container,
        deadline=0.0,
        record=lambda action: None,
        transcript=lambda entry: None,
    )
    located = asyncio.run(bundled._locate(sandbox, invocation, _pi()))
    return located.root, located.mode, len(sandbox.commands)


def _pi() -> BundleSpec:
    spec = bundles.bundle_spec("pi")
    assert spec is not None
    return spec


def _key() -> str:
    return bundles.bundle_key(_pi(), bundles.default_platform())


def test_a_bundle_the_run_stage_mounted_is_used_without_asking_the_container() -> None:
    container = Container(id="c", bundles={"pi": _key()})
    assert _locate(container, {}) == ("/opt/ageval/agents/pi", "mounted", 0)


def test_a_container_found_again_is_asked_for_the_bundles_marker() -> None:
    marker = f"/opt/ageval/agents/pi/{bundles.MARKER}"
    files = {marker: json.dumps({"key": _key()}).encode()}
    assert _locate(Container(id="c"), files) == ("/opt/ageval/agents/pi", "mounted", 1)
