"""Python agent bundles: the pure parts of the builder (which CPython, which wheels, the
launcher, where Debian's packages come from)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from agevalx.agents import bundles, pythonbundles
from agevalx.agents.bundles import BundleError
from agevalx.agents.bundlespec import BundleSpec

pytestmark = pytest.mark.unit

SPEC = BundleSpec(
    name="demo",
    kind="python",
    packages=(("demo-agent", "1.2.3"), ("helper", "0.1")),
    node="",
    runtime="3.13.5",
    interpreter=pythonbundles.LAUNCHER,
    entry="agent.py",
)


def test_a_runtime_names_the_debian_release_that_ships_that_cpython() -> None:
    assert pythonbundles.runtime_of(SPEC) == ("3.13", pythonbundles.RUNTIMES["3.13"])
    assert pythonbundles.RUNTIMES["3.13"].suite == "trixie"
    assert pythonbundles.runtime_of(replace(SPEC, runtime="3.11.2"))[1].suite == "bookworm"
    packages = pythonbundles.debian_packages("3.13", pythonbundles.RUNTIMES["3.13"])
    assert {"python3.13-minimal", "libpython3.13-stdlib", "libc6", "libssl3t64"} <= set(packages)


@pytest.mark.parametrize("runtime", ["3.12.1", "3.13", "", "python3.13.5"])
def test_a_runtime_no_debian_release_ships_is_a_coded_error(runtime: str) -> None:
    with pytest.raises(BundleError) as caught:
        pythonbundles.runtime_of(replace(SPEC, runtime=runtime))
    assert caught.value.code == "bundle_spec_invalid" and "demo" in caught.value.message


def test_pip_installs_exact_pins_as_wheels_for_the_bundled_cpython_and_glibc(
    tmp_path: Path,
) -> None:
    spec = replace(SPEC, pip_options=("--ignore-requires-python",))
    argv = pythonbundles.pip_arguments(
        spec, "linux-x64", tmp_path / "site", tmp_path / "r.json", tmp_path / "wheels"
    )
    assert argv[:3] == ["-m", "pip", "install"]
    assert argv[-2:] == ["demo-agent==1.2.3", "helper==0.1"]
    assert "--only-binary=:all:" in argv and "--ignore-requires-python" in argv
    assert argv[argv.index("--python-version") + 1] == "3.13"
    platforms = [argv[i + 1] for i, word in enumerate(argv) if word == "--platform"]
    assert platforms[0] == "manylinux_2_41_x86_64"  # trixie's glibc, bundled
    assert "manylinux_2_17_x86_64" in platforms and "manylinux_2_42_x86_64" not in platforms


def test_the_launcher_runs_the_bundled_cpython_on_its_own_loader_wherever_it_is() -> None:
    script = pythonbundles.launcher_script("3.13", "linux-x64")
    assert script.startswith("#!/bin/sh\n")
    assert '"$bin/../lib/native/ld-linux-x86-64.so.2" --argv0 "$0"' in script
    assert '--library-path "$bin/../lib/native" "$bin/python3.13-elf" -I "$@"' in script
    assert "/opt/ageval" not in script and "PYTHONHOME" not in script
    arm = pythonbundles.launcher_script("3.11", "linux-arm64")
    assert "ld-linux-aarch64.so.1" in arm and "python3.11-elf" in arm


def test_the_launcher_script_is_valid_shell() -> None:
    script = pythonbundles.launcher_script("3.13", "linux-x64")
    assert subprocess.run(["sh", "-n", "-c", script], check=False).returncode == 0


def test_the_mirror_is_the_first_debian_archive_apt_is_configured_with(tmp_path: Path) -> None:
    parts = tmp_path / "sources.list.d"
    parts.mkdir()
    (parts / "a-other.list").write_text(
        "deb [arch=amd64] https://example.invalid/apt stable main\n"
    )
    (parts / "debian.sources").write_text(
        "Types: deb\n# URIs: http://commented.invalid/debian\n"
        "URIs: http://mirror.invalid/debian\nSuites: bookworm\n"
    )
    found = pythonbundles.configured_mirror((tmp_path / "sources.list", parts))
    assert found == "http://mirror.invalid/debian"
    (tmp_path / "sources.list").write_text(
        "deb [signed-by=/k.gpg] http://one.invalid/debian/ x main\n"
    )
    found = pythonbundles.configured_mirror((tmp_path / "sources.list", parts))
    assert found == "http://one.invalid/debian/"
    assert pythonbundles.configured_mirror((tmp_path / "missing",)) is None
    line = pythonbundles.sources_line("http://one.invalid/debian/", "trixie")
    keyring = pythonbundles.KEYRING
    assert line == f"deb [signed-by={keyring}] http://one.invalid/debian trixie main\n"


def test_resolved_versions_come_from_pips_report(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    installs = [
        {"metadata": {"name": "Demo-Agent", "version": "1.2.3"}},
        {"metadata": {"name": "helper", "version": "0.1"}},
        {"metadata": {}},
    ]
    report.write_text(json.dumps({"install": installs}))
    assert pythonbundles.resolved_versions(report) == {"demo-agent": "1.2.3", "helper": "0.1"}


def test_pip_options_enter_the_key_only_when_set() -> None:
    plain = bundles.bundle_key(SPEC, "linux-x64")
    assert "pip_options" not in SPEC.key_material("linux-x64")
    changed = replace(SPEC, pip_options=("--ignore-requires-python",))
    assert bundles.bundle_key(changed, "linux-x64") != plain


def test_a_machine_without_apt_gets_a_coded_error_naming_the_bundle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(pythonbundles.APT_ENV, "")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BundleError) as caught:
        pythonbundles.build_python(SPEC, tmp_path / "work", "linux-x64")
    assert caught.value.code == "bundle_apt_missing"
    assert "demo" in caught.value.message and "ageval agents export" in (caught.value.hint or "")
