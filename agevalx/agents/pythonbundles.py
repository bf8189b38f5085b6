"""Python agent bundles: a relocatable CPython with the agent's wheels, built on the host.

Task images hold whatever Python they hold, or none, so a Python agent brings its own. The
CPython is Debian bookworm's own build (`python3.11-minimal`, `libpython3.11-stdlib`), taken
with `apt-get download` from Debian's archive together with the C libraries it loads, glibc
and its dynamic loader included. The interpreter is always started through that bundled
loader with the bundled libraries (`bin/python`), so it needs nothing of the task image but
`/bin/sh` and a Linux kernel: not its Python, not even its C library.

    <bundle>/
      bin/python            wrapper: bundled loader + libraries + python3.11, wherever mounted
      python/               the unpacked Debian packages (usr/bin/python3.11, usr/lib/python3.11,
                            lib/<triplet>/libc.so.6, ...), absolute symlinks made relative
      site-packages/        the agent's wheels (`pip install --target`, binary wheels only,
                            for CPython 3.11 on manylinux up to glibc 2.36)

Everything is byte-compiled at build time (`unchecked-hash` .pyc files): the bundle is mounted
read-only, so nothing could be cached at run time. The agent process gets `PYTHONHOME` and
`PYTHONPATH` pointing into the bundle (see `python_environment`).
"""

from __future__ import annotations

import io
import os
import platform as host_platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from agevalx.agents.bundles import BUILD_TIMEOUT, BundleError, BundleSpec, run_step

APT_ENV = "AGEVAL_APT_GET"
"""The apt-get program to download Debian's packages with (default: `apt-get` on PATH)."""

PIP_ENV = "AGEVAL_PIP"
"""The pip to install the agent's wheels with (default: this Python's `-m pip`, else `pip3`)."""

PYTHON_VERSION = "3.11"
"""The CPython of Debian bookworm."""

GLIBC_MINOR = 36
"""Bookworm's glibc is 2.36, bundled: the newest manylinux wheels the bundle can load."""

DEBIAN_PACKAGES = (
    "libc6",
    "python3.11-minimal",
    "libpython3.11-minimal",
    "libpython3.11-stdlib",
    "libexpat1",
    "zlib1g",
    "libssl3",
    "libffi8",
    "libbz2-1.0",
    "liblzma5",
    "libsqlite3-0",
    "libuuid1",
    "libcrypt1",
)
"""CPython and the shared libraries its interpreter and standard extension modules load."""

_ARCHES = {"x64": ("amd64", "x86_64-linux-gnu", "ld-linux-x86-64.so.2", "x86_64")}
"""Per bundle arch: Debian's arch, the multiarch triplet, the loader's name, the wheel arch."""

PYTHON_ROOT = "python"
SITE_PACKAGES = "site-packages"
INTERPRETER = "bin/python"


def python_environment() -> tuple[tuple[str, str], ...]:
    """Variables the bundled CPython runs with (`{root}`: the bundle's path)."""
    return (
        ("PYTHONHOME", "{root}/python/usr"),
        ("PYTHONPATH", "{root}/site-packages"),
        ("PYTHONNOUSERSITE", "1"),
        ("PYTHONDONTWRITEBYTECODE", "1"),
        ("PYTHONUTF8", "1"),
    )


def build_python(spec: BundleSpec, work: Path, platform: str) -> None:
    """Debian's CPython and its libraries, then the spec's PyPI packages, into `work`."""
    arch = platform.split("-", 1)[1]
    if arch not in _ARCHES or _host_arch() != arch:
        raise BundleError(
            "bundle_platform_unsupported",
            f"the {spec.name} bundle can only be built for linux-x64 on a linux-x64 machine "
            f"(asked: {platform})",
            hint="build it on such a machine (ageval agents build NAME) and copy it here "
            "(ageval agents export / import)",
        )
    if spec.runtime and spec.runtime != PYTHON_VERSION:
        raise BundleError(
            "bundle_build_failed",
            f"the {spec.name} bundle asks for CPython {spec.runtime}; bundles carry "
            f"Debian bookworm's CPython {PYTHON_VERSION}",
        )
    debian_arch, triplet, loader, wheel_arch = _ARCHES[arch]
    root = work / PYTHON_ROOT
    root.mkdir()
    with tempfile.TemporaryDirectory(dir=work) as downloads:
        for deb in _download_debs(spec.name, Path(downloads), debian_arch):
            _unpack_deb(deb, root)
    _relative_symlinks(root)
    _write_interpreter(work, triplet, loader)
    _pip_install(spec, work / SITE_PACKAGES, wheel_arch)
    _compile(work)


def _host_arch() -> str:
    machine = host_platform.machine().lower()
    return {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        machine, machine
    )


def _run(argv: list[str], what: str, *, cwd: Path | None = None) -> None:
    run_step(argv, what, cwd=cwd)


def _apt_get(name: str) -> str:
    program = os.environ.get(APT_ENV) or shutil.which("apt-get")
    if not program:
        raise BundleError(
            "bundle_apt_missing",
            f"building the {name} agent bundle needs apt-get on this machine (it downloads "
            "Debian's CPython for the bundle)",
            hint=f"build it on a Debian machine (ageval agents build {name}; ageval agents "
            f"export {name} -o bundles.tar) and bring it here (ageval agents import "
            "bundles.tar)",
        )
    return program


def _download_debs(name: str, target: Path, debian_arch: str) -> list[Path]:
    packages = [f"{package}:{debian_arch}" for package in DEBIAN_PACKAGES]
    _run([_apt_get(name), "download", *packages], "apt-get download", cwd=target)
    debs = sorted(target.glob("*.deb"))
    if len(debs) != len(DEBIAN_PACKAGES):
        raise BundleError(
            "bundle_build_failed",
            f"apt-get downloaded {len(debs)} of {len(DEBIAN_PACKAGES)} Debian packages",
            hint="run `apt-get update` first",
        )
    return debs


def _unpack_deb(deb: Path, root: Path) -> None:
    """Extract a .deb's `data.tar.*` (an `ar` archive member) into `root`."""
    data = deb.read_bytes()
    if not data.startswith(b"!<arch>\n"):
        raise BundleError("bundle_build_failed", f"{deb.name} is not a Debian package")
    offset = 8
    while offset + 60 <= len(data):
        header = data[offset : offset + 60]
        member = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        body = data[offset + 60 : offset + 60 + size]
        if member.startswith("data.tar"):
            with tarfile.open(fileobj=io.BytesIO(body)) as archive:
                archive.extractall(root, filter="tar")
            return
        offset += 60 + size + (size % 2)
    raise BundleError("bundle_build_failed", f"{deb.name} holds no data archive")


def _relative_symlinks(root: Path) -> None:
    """Point absolute symlinks (`/lib64/ld-linux...` -> `/lib/...`) inside the bundle."""
    for directory, names, files in os.walk(root):
        for name in [*names, *files]:
            path = Path(directory, name)
            if path.is_symlink():
                target = os.readlink(path)
                if target.startswith("/"):
                    path.unlink()
                    path.symlink_to(os.path.relpath(root / target.lstrip("/"), path.parent))


def _write_interpreter(work: Path, triplet: str, loader: str) -> None:
    libraries = ":".join(f"$root/{PYTHON_ROOT}/{folder}/{triplet}" for folder in ("lib", "usr/lib"))
    script = (
        "#!/bin/sh\n"
        "# Written by ageval: runs the bundled CPython with the bundled C library.\n"
        'root="${0%/*}/.."\n'
        f'exec "$root/{PYTHON_ROOT}/lib/{triplet}/{loader}" --inhibit-cache '
        f'--library-path "{libraries}" "$root/{PYTHON_ROOT}/usr/bin/python{PYTHON_VERSION}" "$@"\n'
    )
    wrapper = work / INTERPRETER
    wrapper.parent.mkdir(parents=True, exist_ok=True)
    wrapper.write_text(script)
    wrapper.chmod(0o755)


def _pip(name: str) -> list[str]:
    explicit = os.environ.get(PIP_ENV)
    if explicit:
        return [explicit]
    try:
        probe = subprocess.run(
            [sys.executable, "-m", "pip", "--version"], capture_output=True, check=False
        )
        if probe.returncode == 0:
            return [sys.executable, "-m", "pip"]
    except OSError:
        pass
    program = shutil.which("pip3") or shutil.which("pip")
    if not program:
        raise BundleError(
            "bundle_pip_missing",
            f"building the {name} agent bundle needs pip on this machine (the agent runs on "
            "the bundled CPython in the container; pip only downloads its wheels)",
            hint=f"install it (apt-get install -y python3-pip) or point AGEVAL_PIP at a pip "
            f"binary; or build it where pip is (ageval agents build {name}; ageval agents "
            f"export {name} -o bundles.tar) and bring it here (ageval agents import "
            "bundles.tar)",
        )
    return [program]


def _pip_install(spec: BundleSpec, target: Path, wheel_arch: str) -> None:
    requirements = [f"{package}=={version}" for package, version in spec.packages]
    argv = [
        *_pip(spec.name),
        "install",
        "--target",
        str(target),
        "--no-cache-dir",
        "--no-compile",
        "--disable-pip-version-check",
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--python-version",
        PYTHON_VERSION,
        "--abi",
        f"cp{PYTHON_VERSION.replace('.', '')}",
        *_platforms(wheel_arch),
        *requirements,
    ]
    _run(argv, "pip install")


def _platforms(wheel_arch: str) -> list[str]:
    """`--platform` flags for every manylinux tag glibc 2.36 loads (pip does not expand them)."""
    tags = [f"manylinux_2_{minor}_{wheel_arch}" for minor in range(GLIBC_MINOR, 4, -1)]
    tags += [f"manylinux{legacy}_{wheel_arch}" for legacy in ("2014", "2010", "1")]
    return [flag for tag in tags for flag in ("--platform", tag)]


def _compile(work: Path) -> None:
    """Byte-compile the standard library and the wheels with the bundled CPython."""
    stdlib = work / PYTHON_ROOT / "usr" / "lib" / f"python{PYTHON_VERSION}"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    argv = [
        str(work / INTERPRETER),
        "-m",
        "compileall",
        "-q",
        "-j0",
        "--invalidation-mode",
        "unchecked-hash",
        str(stdlib),
        str(work / SITE_PACKAGES),
    ]
    try:
        done = subprocess.run(
            argv,
            env={**env, "PYTHONHOME": str(work / PYTHON_ROOT / "usr")},
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise BundleError("bundle_build_failed", "byte-compiling the bundle timed out") from None
    # compileall exits 1 when some file does not compile (test data, Python 2 leftovers in
    # wheels): those are never imported. An interpreter that cannot start is fatal.
    if done.returncode not in (0, 1) or "Error while finding module" in done.stderr:
        raise BundleError(
            "bundle_build_failed",
            "the bundled CPython does not run",
            hint=(done.stderr or done.stdout).strip()[-1500:] or None,
        )
