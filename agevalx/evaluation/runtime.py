"""The evaluator's own Python: a read-only runtime the agent cannot touch.

An ageval task's evaluator.py runs in a container of the attempt's final filesystem, where the
agent had root: its `python3` (or its libc) may be a shim that prints PASS. So the runner is
run by a runtime ageval brings itself, mounted read-only at `/opt/ageval/python` in scoring
containers only: a CPython with its standard library, its shared libraries and its own dynamic
loader, run as `<loader> --library-path <libs> <python>`, so nothing of the image (its libc
included) is used. It is extracted once from a trusted image (the offline base image
`ageval/base:bookworm`, else `python:3.12-slim-bookworm`, pulled when a registry is
reachable) into `<cache>/bundles/`, and reused.

Site packages are not loaded (`-S`): the runner adds the image's site-packages after the
standard library, so an evaluator may import third-party packages installed in the task
image, which are as trustworthy as the image after the agent ran (docs/security.md).
"""

from __future__ import annotations

import ast
import contextlib
import fcntl
import json
import posixpath
import re
import shlex
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from docker.errors import DockerException, ImageNotFound

from agevalx.agents.bundles import bundles_dir
from agevalx.environments.container import AttemptContainer, ContainerSpec
from agevalx.environments.engine import EnvironmentFailure, client
from agevalx.fsutil import atomic_write
from agevalx.hashing import digest_json

RUNNER = Path(__file__).with_name("runner_script.py")
MOUNT = "/opt/ageval/python"
"""Where scoring containers get the runtime (read-only)."""
SOURCE_IMAGES = ("ageval/base:bookworm", "python:3.12-slim-bookworm")
"""Where the runtime is taken from, the first one present (or pullable)."""
LAYOUT = 2
"""Bumped when the bundle's layout changes (2: the standard library is precompiled)."""
MARKER = ".ageval-runtime.json"
DROPPED = ("test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3")
"""Standard-library packages an evaluator runner never needs."""

_PROBE = (
    "import json, os, sys, sysconfig; "
    "print(json.dumps({'executable': os.path.realpath(sys.executable), "
    "'stdlib': sysconfig.get_paths()['stdlib'], 'version': '%d.%d' % sys.version_info[:2]}))"
)
_LIBRARY = re.compile(r"^\s*(\S+)\s+=>\s+(/\S+)\s+\(")
_LOADER = re.compile(r"^\s*(/\S*ld-linux\S*)\s+\(")


@dataclass(frozen=True)
class EvaluatorRuntime:
    """A runtime on this machine: where it is, and how a container starts it."""

    path: Path
    """The bundle directory on the host (mounted at `MOUNT`)."""
    version: str
    """CPython's `major.minor`."""

    @property
    def mount(self) -> tuple[str, str]:
        return (str(self.path), MOUNT)

    def command(self, *arguments: str) -> list[str]:
        """The argv that runs the runtime's python with `arguments`, isolated from the image:
        its own loader and libraries, no site packages, no user site, no script dir first."""
        return [
            f"{MOUNT}/lib/ld.so",
            "--library-path",
            f"{MOUNT}/lib/shared",
            f"{MOUNT}/bin/python3",
            "-S",
            "-s",
            "-P",
            *arguments,
        ]

    @property
    def environment(self) -> dict[str, str]:
        return {"PYTHONHOME": MOUNT, "PYTHONPATH": "", "PYTHONNOUSERSITE": "1"}


def source_image() -> tuple[str, str]:
    """The first source image present (or pullable) and its id; asked of the engine once per
    process and client (every evaluation needs it)."""
    global _source
    engine = client()
    if _source is None or _source[0] is not engine:
        _source = (engine, _source_image())
    return _source[1]


_source: tuple[object, tuple[str, str]] | None = None
"""The client `source_image` asked, and its answer."""


def _source_image() -> tuple[str, str]:
    for reference in SOURCE_IMAGES:
        found = _image_id(reference)
        if found is not None:
            return reference, found
    for reference in SOURCE_IMAGES[1:]:
        with contextlib.suppress(Exception):
            return reference, str(client().images.pull(reference).id)
    raise EnvironmentFailure(
        "evaluator_runtime_unavailable",
        "no image to take the evaluator's Python from: "
        + " and ".join(SOURCE_IMAGES)
        + " are missing and cannot be pulled",
        hint="build the offline base image with: bash scripts/setup-docker.sh",
    )


def _image_id(reference: str) -> str | None:
    try:
        return str(client().images.get(reference).id)
    except ImageNotFound:
        return None
    except (DockerException, OSError) as exc:
        raise EnvironmentFailure("docker_unavailable", f"the Docker engine failed: {exc}") from None


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def evaluator_runtime(cache_dir: Path | None = None) -> EvaluatorRuntime:
    """The runtime, extracted on first use (once per source image and machine)."""
    source, image_id = source_image()
    key = digest_json({"layout": LAYOUT, "image": image_id})
    root = bundles_dir(cache_dir) / f"evaluator-python-{key}"
    marker = root / MARKER
    with _locked(root.parent / f".evaluator-python-{key}.lock"):
        if not marker.is_file():
            started = time.monotonic()
            shutil.rmtree(root, ignore_errors=True)
            version = _extract(source, root)
            seconds = round(time.monotonic() - started, 3)
            info = {"source": source, "image": image_id, "version": version, "seconds": seconds}
            atomic_write(marker, json.dumps(info).encode())
    version = str(json.loads(marker.read_text())["version"])
    return EvaluatorRuntime(path=root, version=version)


def _extract(source: str, root: Path) -> str:
    """Copy python, its standard library, its shared libraries and the loader out of a
    container of `source` into `root`; the CPython version."""
    spec = ContainerSpec(image=source, name_hint="evaluator-runtime", network="none")
    container = AttemptContainer.start(spec)
    try:
        probe = container.exec(f"python3 -c {json.dumps(_PROBE)}", workdir="/", user="root")
        if probe.exit_code != 0:
            raise EnvironmentFailure(
                "evaluator_runtime_unavailable",
                f"the image {source} has no usable python3: {probe.output[-300:]}",
            )
        found = json.loads(probe.output.strip().splitlines()[-1])
        stdlib, version = str(found["stdlib"]), str(found["version"])
        _precompile(container)
        _copy_file(container, str(found["executable"]), root / "bin" / "python3", 0o755)
        container.get_directory(stdlib, root / "lib" / f"python{version}")
        for name in DROPPED:
            shutil.rmtree(root / "lib" / f"python{version}" / name, ignore_errors=True)
        libraries, loader = _shared_libraries(container, str(found["executable"]), stdlib)
        for soname, path in sorted(libraries.items()):
            _copy_file(container, path, root / "lib" / "shared" / soname, 0o755)
        _copy_file(container, loader, root / "lib" / "ld.so", 0o755)
    finally:
        container.remove()
    return version


def runner_imports() -> list[str]:
    """The modules the evaluator's runner imports (its top-level `import`s)."""
    tree = ast.parse(RUNNER.read_text(encoding="utf-8"))
    names: list[str] = []
    for statement in tree.body:
        if isinstance(statement, ast.Import):
            names += [alias.name for alias in statement.names]
        elif isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
            names.append(statement.module)
    return sorted(set(names))


def _precompile(container: AttemptContainer) -> None:
    """Compile, by the runtime's own python3 before it is copied out, every module the runner
    loads: the bundle is mounted read-only, so a module without its `.pyc` is compiled again
    by every evaluation (`typing`, `pathlib`, `ipaddress`: a third of a second). The `.pyc`
    files are used without checking their source's time (the bundle never changes); other
    modules an evaluator imports are compiled when imported, as before."""
    script = (
        "import importlib, importlib.util, py_compile, sys\n"
        f"for name in {runner_imports()!r}: importlib.import_module(name)\n"
        "mode = py_compile.PycInvalidationMode.UNCHECKED_HASH\n"
        "for module in list(sys.modules.values()):\n"
        "    path = getattr(module, '__file__', None) or ''\n"
        "    if path.endswith('.py'):\n"
        "        target = importlib.util.cache_from_source(path)\n"
        "        py_compile.compile(path, target, doraise=False, invalidation_mode=mode)\n"
    )
    container.exec(f"python3 -c {shlex.quote(script)}", workdir="/", user="root")


def _shared_libraries(
    container: AttemptContainer, executable: str, stdlib: str
) -> tuple[dict[str, str], str]:
    """`{soname: path}` of every library python and its extension modules link, and the
    dynamic loader's path (from `ldd`)."""
    dynload = posixpath.join(stdlib, "lib-dynload")
    listing = container.exec(
        f"ldd {executable} {dynload}/*.so 2>/dev/null", workdir="/", user="root"
    )
    libraries: dict[str, str] = {}
    loader = ""
    for line in listing.output.splitlines():
        library = _LIBRARY.match(line)
        if library:
            libraries.setdefault(library.group(1), library.group(2))
            continue
        found = _LOADER.match(line)
        if found:
            loader = found.group(1)
    if not loader:
        raise EnvironmentFailure(
            "evaluator_runtime_unavailable", "cannot find the dynamic loader of python3"
        )
    return libraries, loader


def _copy_file(container: AttemptContainer, source: str, target: Path, mode: int) -> None:
    resolved = container.exec(f"readlink -f {source}", workdir="/", user="root").output.strip()
    if not container.copy_file(resolved or source, target):
        raise EnvironmentFailure(
            "evaluator_runtime_unavailable", f"cannot copy {source} out of the runtime image"
        )
    target.chmod(mode)
