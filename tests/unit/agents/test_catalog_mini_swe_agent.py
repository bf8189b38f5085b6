"""mini-swe-agent's bundle and configuration, and the Python bundle builder's parts."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from agevalx.agents import pythonbundles
from agevalx.agents.bundles import BundleError, launch_command
from agevalx.agents.catalog.base import PROVIDERS, AgentSetup
from agevalx.agents.catalog.mini_swe_agent import AGENT, NO_KEY

pytestmark = pytest.mark.unit

ROOT = "/opt/ageval/agents/mini-swe-agent"


def _setup(*, has_key: bool = True) -> AgentSetup:
    return AgentSetup(
        model="gpt-5.4-mini",
        provider=PROVIDERS["openai"],
        api="openai-chat",
        base_url="http://host.docker.internal:41234/v1",
        has_key=has_key,
        home="/attempt/home",
        workdir="/attempt/workspace",
        root=ROOT,
        profile={},
    )


def test_the_key_reaches_only_litellms_variable_by_name() -> None:
    config = AGENT.configure(_setup())
    assert config.key_variables == ("OPENAI_API_KEY",)
    assert config.env == {
        "MSWEA_ACP_MODEL": "openai/gpt-5.4-mini",
        "MSWEA_ACP_BASE_URL": "http://host.docker.internal:41234/v1",
    }
    assert not config.files


def test_without_a_key_litellm_gets_a_placeholder() -> None:
    config = AGENT.configure(_setup(has_key=False))
    assert config.key_variables == ()
    assert config.env["OPENAI_API_KEY"] == NO_KEY


def test_the_bundle_runs_the_shipped_adapter_on_the_bundled_python_quietly() -> None:
    argv, env = launch_command(AGENT.bundle, ROOT)
    assert argv == [f"{ROOT}/bin/python", f"{ROOT}/adapter/minisweagent_acp.py"]
    assert env["PYTHONHOME"] == f"{ROOT}/python/usr"
    assert env["PYTHONPATH"] == f"{ROOT}/site-packages"
    assert env["MSWEA_SILENT_STARTUP"] == "1"
    assert env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    shipped = dict(AGENT.bundle.files)["adapter/minisweagent_acp.py"]
    assert "def run_mini_swe_agent" in shipped
    assert "from agevalx" not in shipped and "import agevalx" not in shipped
    assert AGENT.version == "2.4.6"


def _deb(files: dict[str, bytes]) -> bytes:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:xz") as archive:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
        link = tarfile.TarInfo("./lib64/ld.so")
        link.type = tarfile.SYMTYPE
        link.linkname = "/lib/x86_64-linux-gnu/ld.so"
        archive.addfile(link)
    members = [(b"debian-binary", b"2.0\n"), (b"data.tar.xz", data.getvalue())]
    out = b"!<arch>\n"
    for name, body in members:
        header = name.ljust(16) + b"0".ljust(12) + b"0".ljust(6) * 2 + b"100644".ljust(8)
        out += header + str(len(body)).encode().ljust(10) + b"`\n" + body
        out += b"\n" if len(body) % 2 else b""
    return out


def test_a_debian_package_unpacks_with_its_absolute_symlinks_made_relative(
    tmp_path: Path,
) -> None:
    deb = tmp_path / "libc6.deb"
    deb.write_bytes(_deb({"./lib/x86_64-linux-gnu/ld.so": b"loader"}))
    root = tmp_path / "python"
    root.mkdir()
    pythonbundles._unpack_deb(deb, root)
    pythonbundles._relative_symlinks(root)
    assert os.readlink(root / "lib64" / "ld.so") == "../lib/x86_64-linux-gnu/ld.so"
    assert (root / "lib64" / "ld.so").read_bytes() == b"loader"


def test_missing_pip_or_apt_get_is_a_coded_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(pythonbundles.PIP_ENV, raising=False)
    monkeypatch.delenv(pythonbundles.APT_ENV, raising=False)
    monkeypatch.setattr(pythonbundles.shutil, "which", lambda name: None)
    monkeypatch.setattr(pythonbundles.sys, "executable", "/nonexistent/python")
    with pytest.raises(BundleError) as pip:
        pythonbundles._pip("mini-swe-agent")
    assert pip.value.code == "bundle_pip_missing"
    assert "ageval agents export mini-swe-agent" in (pip.value.hint or "")
    with pytest.raises(BundleError) as apt:
        pythonbundles._apt_get("mini-swe-agent")
    assert apt.value.code == "bundle_apt_missing"


def test_wheels_are_chosen_for_every_manylinux_the_bundled_glibc_loads() -> None:
    flags = pythonbundles._platforms("x86_64")
    tags = flags[1::2]
    assert tags[0] == "manylinux_2_36_x86_64"
    assert {"manylinux_2_17_x86_64", "manylinux2014_x86_64"} <= set(tags)
    assert "manylinux_2_37_x86_64" not in tags
