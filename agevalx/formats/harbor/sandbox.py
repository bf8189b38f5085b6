"""Running commands in an `AttemptContainer` the way Harbor's docker environment does.

Harbor runs every command of the main container as `bash -c CMD` (`docker compose exec`),
in the task's workdir (else the image's), with the container's environment. Here the shell
is bash when the image has one and `sh` otherwise, and HOME is the exec user's home from
/etc/passwd (our containers set HOME=/attempt/home for agents, which Harbor never does).
"""

from __future__ import annotations

import shlex
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import docker

from agevalx.environments.container import AttemptContainer, ContainerSpec, ExecResult
from agevalx.environments.engine import EnvironmentFailure
from agevalx.errors import AgevalError
from agevalx.formats.harbor import errors
from agevalx.formats.harbor.errors import HarborRunError
from agevalx.formats.harbor.models import ArtifactConfig
from agevalx.formats.harbor.spec import HarborTaskSpec
from agevalx.fsutil import make_dirs

LOGS = "/logs"
AGENT_LOGS = "/logs/agent"
VERIFIER_LOGS = "/logs/verifier"
ARTIFACT_LOGS = "/logs/artifacts"
TESTS = "/tests"
SOLUTION = "/solution"
ROOT = "root"
READ_LIMIT = 16 << 20
OUTPUT_TAIL = 64 << 10

SANDBOX_ERRORS: tuple[type[BaseException], ...] = (
    EnvironmentFailure,
    docker.errors.DockerException,
    tarfile.TarError,
    OSError,
)
"""Failures of the sandbox itself (exec, file transfer), never of the task."""


def container_spec(spec: HarborTaskSpec, image: str, name_hint: str) -> ContainerSpec:
    """A `ContainerSpec` with the task's resources and container environment."""
    resources = spec.resources
    return ContainerSpec(
        image=image,
        name_hint=name_hint,
        cpus=float(resources.cpus) if resources.cpus else None,
        memory_mb=resources.memory_mb,
        gpus=resources.gpus,
        gpu_types=spec.gpu_types,
        environment=tuple(sorted(spec.environment_env.items())),
    )


SHELL_PROBE = "command -v bash >/dev/null 2>&1 && echo bash || echo sh"
"""Prints the shell Harbor runs commands with in the container (see `shell_of`)."""


def shell_of(container: AttemptContainer) -> str:
    """`bash` when the image has it, else `sh`."""
    probe = container.exec(SHELL_PROBE, workdir="/", user=ROOT)
    return "bash" if probe.output.strip().endswith("bash") else "sh"


def home_of(container: AttemptContainer, user: str | None) -> str:
    """The exec user's home directory from /etc/passwd (`/` when it has no entry); for the
    default user (None), what `prepare_environment` found, when it asked."""
    if user is None and container.default_home is not None:
        return container.default_home
    probe = container.exec(
        'getent passwd "$(id -u)" | cut -d: -f6', workdir="/", user=user, environment={}
    )
    home = probe.output.strip().splitlines()
    return home[0] if probe.exit_code == 0 and home and home[0].startswith("/") else "/"


def run_shell(
    container: AttemptContainer,
    shell: str,
    command: str,
    *,
    workdir: str,
    environment: Mapping[str, str],
    user: str | None = None,
    timeout: float | None = None,
) -> ExecResult:
    """`<shell> -c command`, as Harbor's `exec`."""
    return container.exec(
        f"{shell} -c {shlex.quote(command)}",
        timeout=timeout,
        workdir=workdir,
        environment=dict(environment),
        user=user,
    )


def run_checked(container: AttemptContainer, command: str, what: str) -> ExecResult:
    """A root housekeeping command whose failure is a sandbox failure."""
    result = container.exec(command, workdir="/", user=ROOT)
    if result.exit_code != 0:
        raise EnvironmentFailure(
            "exec_failed", f"{what} failed ({result.exit_code}): {result.output[-500:]}"
        )
    return result


def read_text(container: AttemptContainer, path: str, limit: int = READ_LIMIT) -> bytes | None:
    return container.read_file(path, limit=limit)


def tail(data: bytes | None, size: int = OUTPUT_TAIL) -> str:
    return (data or b"")[-size:].decode("utf-8", errors="replace")


def directory_files(source: Path) -> dict[str, tuple[bytes, int]]:
    """Regular files under `source` as `{relative path: (content, mode)}`."""
    files: dict[str, tuple[bytes, int]] = {}
    for path in sorted(source.rglob("*")):
        if path.is_file():
            files[path.relative_to(source).as_posix()] = (
                path.read_bytes(),
                path.stat().st_mode & 0o7777,
            )
    return files


def prepare_environment(
    container: AttemptContainer,
    spec: HarborTaskSpec,
    *,
    workdir: str | None = None,
    also: tuple[str, ...] = (),
) -> None:
    """What Harbor's docker environment does after start: environment/ copied into the
    workdir of a prebuilt image without Dockerfile, and /logs/{agent,verifier,artifacts}
    created world-writable; the directories `also` are made in the same exec."""
    if spec.upload_environment_dir:
        target = workdir or spec.workdir or "/"
        container.put_files(target, directory_files(spec.dir / "environment"))
    dirs = f"{AGENT_LOGS} {VERIFIER_LOGS} {ARTIFACT_LOGS}"
    made = " ".join((dirs, *also))
    probe = _home_probe(container)
    command = f"mkdir -p {made} && chmod 777 {dirs}" + (f" && {{ {probe}; }}" if probe else "")
    result = run_checked(container, command, "creating /logs")
    _remember_home(container, probe, result.output)


LOG_DIRS = (LOGS, AGENT_LOGS)
"""Directories the agent must leave directories (Harbor mounts them, so its agents cannot
replace them): the artifacts and the verifier's logs live under them."""


def check_log_dirs(container: AttemptContainer, spec: HarborTaskSpec) -> list[bool] | None:
    """Raise `harbor_logs_replaced` when the agent left /logs or /logs/agent as something
    other than a directory (a file, a link): the task fails with a code, not a Docker error.
    Asked in the same exec: which entries of the collection set (`artifact_entries`) are
    directories, in order (None when the answer is not whole: each is then asked apart)."""
    script = " ".join(
        f"{{ [ -d {path} ] && [ ! -L {path} ]; }} || echo {REPLACED}{path};" for path in LOG_DIRS
    )
    entries = artifact_entries(spec)
    for artifact in entries:
        source = shlex.quote(artifact.source)
        script += f" if [ -d {source} ]; then echo {KIND}d; else echo {KIND}-; fi;"
    probe = container.exec(script, workdir="/", user=ROOT)
    lines = probe.output.splitlines()
    replaced = [line.removeprefix(REPLACED) for line in lines if line.startswith(REPLACED)]
    kinds = [line.removeprefix(KIND) == "d" for line in lines if line.startswith(KIND)]
    directories = kinds if probe.exit_code == 0 and len(kinds) == len(entries) else None
    if probe.exit_code != 0 or not replaced:
        return directories
    raise HarborRunError(
        errors.LOGS_REPLACED,
        f"the agent replaced {replaced[0]} with something that is not a directory, so the "
        f"attempt of {spec.name} cannot be collected or verified",
        field=replaced[0],
        hint="the agent must keep /logs and /logs/agent directories (it may write into them)",
    )


REPLACED = "ageval-replaced="
KIND = "ageval-kind="


def _is_directory(container: AttemptContainer, path: str) -> bool:
    probe = container.exec(f"test -d {shlex.quote(path)}", workdir="/", user=ROOT)
    return probe.exit_code == 0


MAIN_SERVICES = (None, "main")
"""Compose services whose artifacts are collected (the main container's)."""


def artifact_entries(spec: HarborTaskSpec) -> list[ArtifactConfig]:
    """Harbor's collection set: /logs/artifacts first unless an entry declares it, then the
    declared entries (those of other compose services are not collected)."""
    declared = [a for a in spec.artifacts if a.service in MAIN_SERVICES]
    if any(a.source.rstrip("/") == ARTIFACT_LOGS for a in declared):
        return declared
    return [ArtifactConfig(source=ARTIFACT_LOGS), *declared]


def host_path(collected: Path, artifact: ArtifactConfig) -> Path:
    """Where an entry is collected: its `destination`, else its source mirrored."""
    relative = PurePosixPath(artifact.destination or artifact.source)
    parts = [part for part in relative.parts if part not in ("", "/", "..")]
    return collected.joinpath(*parts)


UNSAFE_CODES = frozenset({"unsafe_path"})
"""Why an artifact is skipped: its host path would run through a symlink the agent made."""


def collect_artifacts(
    container: AttemptContainer,
    spec: HarborTaskSpec,
    destination: Path,
    directories: list[bool] | None = None,
) -> list[str]:
    """Copy the collection set out of the container, each entry to its host path under
    `destination`, files whole, as Harbor's artifact handler places them; returns the
    sources found. `exclude` patterns are not applied; missing sources are skipped.
    `directories`: which entries are directories (`check_log_dirs`), else asked per entry."""
    collected: list[str] = []
    entries = artifact_entries(spec)
    if directories is None or len(directories) != len(entries):
        directories = [_is_directory(container, artifact.source) for artifact in entries]
    for artifact, directory in zip(entries, directories, strict=True):
        target = host_path(destination, artifact)
        try:
            if directory:
                make_dirs(target.parent, destination)
                if target.is_symlink():  # an earlier entry's link: never written through
                    raise AgevalError("unsafe_path", f"{target} is a symlink")
                container.get_directory(artifact.source, target)
                collected.append(artifact.source)
                continue
            if container.copy_file(artifact.source, target, root=destination):  # streamed
                collected.append(artifact.source)
        except AgevalError as exc:
            if exc.code not in UNSAFE_CODES:
                raise
            continue  # an entry nested under a link another entry left is not collected
    return collected


def reset_verifier_dirs(container: AttemptContainer, upload_tests: bool) -> str:
    """Empty /logs/verifier and (when the tests are uploaded) /tests; the shell test.sh runs
    with (`shell_of`), asked in the same exec."""
    return _reset(container, upload_tests, "")[0]


@dataclass(frozen=True)
class VerifierSetup:
    """What `prepare_verifier` found: the shell test.sh runs with, and its user's home."""

    shell: str
    home: str


HOME_MARK = "ageval-home="


def prepare_verifier(
    container: AttemptContainer, upload_tests: bool, test_script: str | None
) -> VerifierSetup:
    """`reset_verifier_dirs`, the home of the image's default user (as `home_of` finds it)
    and, with `test_script`, its `chmod +x` (whose failure is ignored, as before), in one
    root exec: `home_of` and the chmod took an exec each."""
    probe = _home_probe(container)
    extra = f"{probe}; " if probe else ""
    if test_script is not None:
        extra = f"chmod +x {shlex.quote(test_script)} 2>/dev/null; " + extra
    shell, output = _reset(container, upload_tests, extra)
    _remember_home(container, probe, output)
    return VerifierSetup(shell=shell, home=home_of(container, None))


def _home_probe(container: AttemptContainer) -> str:
    """Commands that print, after `HOME_MARK`, the home of the container's default user as
    `home_of` finds it as that user (from /etc/passwd by its uid), for a root exec to run;
    empty when the engine cannot say who that user is (`home_of` then asks as that user)."""
    user = container.default_user()
    if user is None:
        return ""
    name = user.split(":", 1)[0]
    uid = f"$(id -u {shlex.quote(name)} 2>/dev/null)" if name else "0"
    return f'printf "{HOME_MARK}%s\\n" "$(getent passwd "{uid}" | cut -d: -f6 | head -n 1)"'


def _remember_home(container: AttemptContainer, probe: str, output: str) -> None:
    """Keep the home that `probe` printed in `output` (`/` when none, as `home_of`) as the
    container's `default_home`, where `home_of` finds it."""
    if not probe:
        return
    homes = [
        line.removeprefix(HOME_MARK).strip()
        for line in output.splitlines()
        if line.startswith(HOME_MARK)
    ]
    container.default_home = homes[-1] if homes and homes[-1].startswith("/") else "/"


def _reset(container: AttemptContainer, upload_tests: bool, extra: str) -> tuple[str, str]:
    """The reset of `reset_verifier_dirs`, then the commands `extra`, then the shell probe;
    the shell and the exec's output."""
    targets = f"{TESTS} {VERIFIER_LOGS}" if upload_tests else VERIFIER_LOGS
    command = f"rm -rf {targets} && mkdir -p {targets} && chmod 777 {VERIFIER_LOGS}"
    result = container.exec(f"{command} && {{ {extra}{SHELL_PROBE}; }}", workdir="/", user=ROOT)
    if result.exit_code != 0:
        raise EnvironmentFailure(
            "exec_failed",
            f"emptying /tests and /logs/verifier failed ({result.exit_code}): "
            + result.output[-500:],
        )
    shell = "bash" if result.output.strip().endswith("bash") else "sh"
    return shell, result.output
