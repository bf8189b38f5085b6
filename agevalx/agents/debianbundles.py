"""Bundles of Debian programs (`kind: debian`): a native tool for any Linux container.

Some agents need a program in the container that task images do not carry (terminus-2 drives
tmux). Such a bundle is made from Debian's packages, downloaded by `apt-get download` at the
versions of the spec (`packages`; an empty version takes apt's candidate) and unpacked with
`dpkg-deb`. When apt cannot find them, its package lists are refreshed once (`apt-get
update`) and the download tried again.

    <bundle>/libexec/<name>     the program (from `wrappers`: name -> path inside the packages)
    <bundle>/lib/               every shared library the packages hold at the top of their
                                lib/<triplet>/ folders, the C library and its loader included
    <bundle>/bin/<name>         `exec <bundle>/lib/<loader> --library-path <bundle>/lib
                                <bundle>/libexec/<name> "$@"`
    <bundle>/locale/C.utf8/     C.UTF-8 (when libc-bin is among the packages): given to the
                                program (LOCPATH) only when it fails without it, on an image
                                that has no UTF-8 locale its C library can load
    <bundle>/versions.txt       the packages used, `name version` per line

The program starts on the bundle's own loader and C library, so it needs none of the
image's libraries (an older glibc, musl, or none); the programs it starts (a shell) are the
image's own, on the image's libraries: nothing leaks into them (no LD_LIBRARY_PATH).
"""

from __future__ import annotations

import os
import platform as host_platform
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import unquote

from agevalx.agents.bundles import BundleError
from agevalx.agents.bundlespec import BundleSpec

APT_TIMEOUT = 600.0

UTF8_LOCALE = "C.utf8"
"""The locale kept from the packages (libc-bin's), for images that have no UTF-8 locale."""

_DEBIAN = {
    "linux-x64": ("amd64", "x86_64-linux-gnu", "ld-linux-x86-64.so.2"),
    "linux-arm64": ("arm64", "aarch64-linux-gnu", "ld-linux-aarch64.so.1"),
}
"""Per platform: Debian's architecture, the multiarch triplet, the dynamic loader."""

_MACHINES = {"x86_64": "linux-x64", "amd64": "linux-x64", "aarch64": "linux-arm64"}


def build_debian(spec: BundleSpec, work: Path, platform: str) -> None:
    """Download and unpack the spec's packages, keep the programs and libraries."""
    if platform not in _DEBIAN or _MACHINES.get(host_platform.machine().lower()) != platform:
        raise BundleError(
            "bundle_platform_unsupported",
            f"the {spec.name} bundle is built from this machine's Debian packages, which are "
            f"not for {platform}",
            hint=f"build it on a {platform} Debian bookworm machine and copy its built folder "
            "(<bundles>/<key>/) into this machine's bundles folder",
        )
    architecture, triplet, loader = _DEBIAN[platform]
    with tempfile.TemporaryDirectory(prefix="ageval-debs-") as scratch:
        unpacked = Path(scratch) / "root"
        versions = []
        for deb in _download(spec, Path(scratch), architecture):
            _run(["dpkg-deb", "-x", str(deb), str(unpacked)], spec.name)
            name, version, _ = deb.name.split("_", 2)
            versions.append(f"{name} {unquote(version)}\n")
        (work / "versions.txt").write_text("".join(versions))
        libraries = work / "lib"
        libraries.mkdir()
        for folder in (unpacked / "lib" / triplet, unpacked / "usr" / "lib" / triplet):
            for path in sorted(folder.glob("*")) if folder.is_dir() else ():
                if path.is_file():  # symlinks too: copied as the file they name
                    shutil.copy2(path, libraries / path.name)
        if not (libraries / loader).is_file():
            raise BundleError("bundle_build_failed", f"the packages hold no {loader}")
        locale = unpacked / "usr" / "lib" / "locale" / UTF8_LOCALE
        if locale.is_dir():
            shutil.copytree(locale, work / "locale" / UTF8_LOCALE)
        for name, program in spec.wrappers:
            source = unpacked / program
            if not source.is_file():
                raise BundleError("bundle_build_failed", f"the packages hold no {program}")
            target = work / "libexec" / name
            target.parent.mkdir(exist_ok=True)
            shutil.copy2(source, target)
            wrapper = work / "bin" / name
            wrapper.parent.mkdir(exist_ok=True)
            wrapper.write_text(_wrapper(name, loader, locale=locale.is_dir()))
            wrapper.chmod(0o755)


def _wrapper(name: str, loader: str, *, locale: bool) -> str:
    run = f'"$root/lib/{loader}" --library-path "$root/lib" "$root/libexec/{name}"'
    fallback = (
        "# A program that needs a UTF-8 locale (tmux) gets the bundle's C.UTF-8 when the image\n"
        "# has none its C library can load (LOCPATH; the programs it starts inherit it).\n"
        f'if ! {run} -V >/dev/null 2>&1; then LOCPATH="$root/locale"; export LOCPATH; fi\n'
        if locale
        else ""
    )
    return (
        "#!/bin/sh\n"
        f"# Written by ageval: {name} on this bundle's own loader and C library.\n"
        'root="${0%/*}/.."\n'
        f"{fallback}"
        f'exec {run} "$@"\n'
    )


def _download(spec: BundleSpec, into: Path, architecture: str) -> list[Path]:
    wanted = [
        f"{name}:{architecture}" + (f"={version}" if version else "")
        for name, version in spec.packages
    ]
    try:
        _run(["apt-get", "download", *wanted], spec.name, cwd=into)
    except BundleError as exc:
        if exc.code != "bundle_build_failed":
            raise
        _run(["apt-get", "update", "-qq"], spec.name)  # empty or stale package lists
        _run(["apt-get", "download", *wanted], spec.name, cwd=into)
    debs = sorted(into.glob("*.deb"))
    if len(debs) != len(spec.packages):
        raise BundleError(
            "bundle_build_failed",
            f"apt-get downloaded {len(debs)} packages of the {len(spec.packages)} the "
            f"{spec.name} bundle needs",
        )
    return debs


def _run(argv: list[str], name: str, cwd: Path | None = None) -> None:
    hint = (
        f"the {name} bundle is made from Debian bookworm's packages: build it on a bookworm "
        "machine with apt (apt-get update first), or copy its built folder (<bundles>/<key>/) "
        "from one into this machine's bundles folder"
    )
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=APT_TIMEOUT,
            check=False,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )
    except FileNotFoundError:
        raise BundleError("bundle_apt_missing", f"cannot run {argv[0]}", hint=hint) from None
    except subprocess.TimeoutExpired:
        raise BundleError(
            "bundle_build_failed", f"{argv[0]} took longer than {APT_TIMEOUT:g} s", hint=hint
        ) from None
    if done.returncode != 0:
        output = (done.stderr or done.stdout).strip()
        raise BundleError(
            "bundle_build_failed",
            f"`{' '.join(argv[:2])}` failed with exit code {done.returncode}: {output[-800:]}",
            hint=hint,
        )
