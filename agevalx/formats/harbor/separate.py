"""Harbor's `separate` verifier environment: a fresh container that gets the agent's artifacts.

Harbor 0.26 verifies a single-step task in separate mode this way (trial/single_step.py
`_run`, trial/trial.py `_run_separate_verifier`): /logs/artifacts and the declared
`[[artifacts]]` are collected from the agent's environment, which is then stopped; the
verifier environment (models/task/verifier_mode.py `resolve_verifier_environment_definition`)
starts; /logs/verifier is emptied; every artifact is re-materialized at its original source
path (trial/artifact_handler.py `upload_artifacts`); and the verifier runs there, uploading
tests/ unless the verifier image owns /tests. Nothing else of the agent's container is seen.

`verifier_task` is the task as the verifier environment sees it (image or build context,
workdir, resources, container env), so `build_task_image`, `container_spec` and
`run_verifier` apply to it unchanged.
"""

from __future__ import annotations

import fnmatch
import io
import shlex
import shutil
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from agevalx.environments.container import AttemptContainer
from agevalx.formats.harbor.outcomes import (
    VERIFIER_SANDBOX_FAILED,
    VerifierOutcome,
    VerifierStatus,
)
from agevalx.formats.harbor.sandbox import (
    SANDBOX_ERRORS,
    VERIFIER_LOGS,
    artifact_entries,
    directory_files,
    host_path,
    run_checked,
)
from agevalx.formats.harbor.spec import HarborTaskSpec
from agevalx.formats.harbor.taskdir import DOCKERFILE
from agevalx.formats.harbor.verifier import run_verifier, unverifiable

StartContainer = Callable[[HarborTaskSpec], tuple[AttemptContainer, str]]
"""Starts the verifier environment's container for a task view; returns it and its working
directory."""


def verifier_task(spec: HarborTaskSpec) -> HarborTaskSpec:
    """`spec` as seen from its separate verifier environment (Harbor's definition rules).

    `[verifier.environment]` replaces the task's workdir, resources and container env (the
    job's and the run's overrides over it, resolved by the loader); without it the task's
    `[environment]` is used. The image is the verifier environment's
    `docker_image`, else tests/Dockerfile, else the task's image or environment/Dockerfile.
    The agent's healthcheck does not run there.
    """
    separate = spec.verifier.separate
    if separate is None:
        raise ValueError(f"task {spec.name} is verified in the agent's environment")
    context = separate.build_context
    update: dict[str, Any] = {
        "image": separate.image,
        "dockerfile": None if context is None else context / DOCKERFILE,
        "upload_environment_dir": spec.upload_environment_dir and not separate.bundled_tests,
        "healthcheck": None,
    }
    if spec.workdir_source == "dockerfile":  # environment/Dockerfile's: the image has it
        update |= {"workdir": None, "workdir_source": None}
    own = separate.own
    if own is not None:
        update |= {
            "workdir": own.workdir,
            "workdir_source": "task" if own.workdir else None,
            "resources": own.resources,
            "environment_env": own.environment_env,
        }
    return spec.model_copy(update=update)


def excluded(relative: str, patterns: list[str]) -> bool:
    """Whether GNU tar's `--exclude` (as Harbor passes it, for `tar -C source .`) drops the
    member `./relative`: a pattern matches the whole name or any trailing run of its
    components, and `*` matches `/` too."""
    parts = PurePosixPath(relative).parts
    names = [f"./{relative}", *("/".join(parts[i:]) for i in range(len(parts)))]
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns for name in names)


def _drop_excluded(root: Path, patterns: list[str]) -> None:
    for path in sorted(root.rglob("*"), key=lambda p: len(p.parts)):
        if (path.exists() or path.is_symlink()) and excluded(
            path.relative_to(root).as_posix(), patterns
        ):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()


def sanitized_copy(source: Path, staging: Path) -> Path:
    """Harbor's `copy_via_tar`: `source` copied to `staging/<name>` through a tar read back
    with the `data` filter, so setuid bits, special files and links leaving it are dropped."""
    is_dir = source.is_dir() and not source.is_symlink()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(source, arcname="." if is_dir else source.name)
    buffer.seek(0)
    target = staging / source.name if is_dir else staging
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=buffer, mode="r") as archive:
        for member in archive:
            try:
                archive.extract(member, target, filter="data")
            except tarfile.FilterError:
                continue
    return staging / source.name


def restore_artifacts(
    container: AttemptContainer, spec: HarborTaskSpec, collected: Path, staging: Path
) -> list[str]:
    """Re-materialize the collected artifacts at their source paths (Harbor's
    `upload_artifacts`): a directory replaces the emptied target, a file lands in its
    parent (created, mode 777). Returns the sources restored; missing ones are skipped."""
    restored: list[str] = []
    for index, artifact in enumerate(artifact_entries(spec)):
        found = host_path(collected, artifact)
        if not found.exists():
            continue
        copy = sanitized_copy(found, staging / str(index))
        if not (copy.exists() or copy.is_symlink()):
            continue
        target = artifact.source.rstrip("/") or "/"
        if copy.is_dir() and not copy.is_symlink():
            _drop_excluded(copy, artifact.exclude)
            copy.chmod(0o777)  # the copy's root entry keeps the emptied target world-writable
            quoted = shlex.quote(target)
            run_checked(
                container,
                f"rm -rf {quoted} && mkdir -p {quoted} && chmod 777 {quoted}",
                f"emptying {target}",
            )
            container.put_directory(copy, target)
        else:
            parent, name = str(PurePosixPath(target).parent), PurePosixPath(target).name
            quoted = shlex.quote(parent)
            run_checked(container, f"mkdir -p {quoted} && chmod 777 {quoted}", f"creating {parent}")
            container.put_files(parent, {name: (copy.read_bytes(), copy.stat().st_mode & 0o7777)})
        restored.append(artifact.source)
    return restored


def _prepare(container: AttemptContainer, view: HarborTaskSpec, workdir: str) -> None:
    """What Harbor's environment start does there: environment/ copied into the workdir of
    a prebuilt image without Dockerfile (not for a verifier image), /logs/verifier
    world-writable."""
    if view.upload_environment_dir:
        container.put_files(workdir, directory_files(view.dir / "environment"))
    run_checked(
        container, f"mkdir -p {VERIFIER_LOGS} && chmod 777 {VERIFIER_LOGS}", "creating /logs"
    )


def _outcome(status: VerifierStatus, code: str, message: str, started: float) -> VerifierOutcome:
    return VerifierOutcome(
        status=status, code=code, message=message, duration_sec=time.monotonic() - started
    )


def verify_separately(
    spec: HarborTaskSpec,
    gather: Callable[[Path], None],
    open_verifier: StartContainer,
    *,
    trial_root: Path | None = None,
) -> VerifierOutcome:
    """Verify the attempt in a fresh verifier environment: `gather` puts the attempt's
    collected artifacts into an empty directory (collected after its run, or now from a
    container of its final filesystem), `open_verifier` starts the verifier environment's
    container for the task as the verifier sees it. Never raises for a sandbox failure (FATAL
    outcome)."""
    started = time.monotonic()
    early = unverifiable(spec, started)
    if early is not None:
        return early
    view = verifier_task(spec)
    try:
        with tempfile.TemporaryDirectory(prefix="ageval-artifacts-") as work:
            collected = Path(work) / "collected"
            collected.mkdir()
            gather(collected)
            container, workdir = open_verifier(view)
            try:
                _prepare(container, view, workdir)
                restore_artifacts(container, spec, collected, Path(work) / "staged")
                return run_verifier(container, view, workdir=workdir, trial_root=trial_root)
            finally:
                container.remove()
    except SANDBOX_ERRORS as exc:
        message = f"the sandbox failed around the separate verifier: {exc}"
        return _outcome(VerifierStatus.FATAL, VERIFIER_SANDBOX_FAILED, message, started)
