"""Harbor verifier classes (job `verifier.import_path`) run against an `AttemptContainer`.

As in Harbor, the class runs in this process, on the host. It gets what Harbor's trial gives
a verifier (`harbor.verifier.factory.VerifierFactory.create_verifier_from_import_path`): the
Harbor `Task` of the task directory, `TrialPaths` under `<trial_root>/<task>/<uuid>/`, and an
environment, a Harbor `BaseEnvironment` whose commands and file transfers go to ageval's
container; then `verifier.kwargs` as keyword arguments. Its `verify()` runs under the
verifier timeout, as `Trial._verify_with_timeout` runs it.

Harbor needs Python >= 3.12 and is imported only here, only when a job config names a
class: `load_verifier_class` imports the class when tasks are loaded, so a missing package
or a class that is not a `BaseVerifier` fails the run before any environment starts.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import inspect
import logging
import platform
import posixpath
import shlex
import sys
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from agevalx.environments.container import AttemptContainer, ExecResult
from agevalx.formats.harbor import errors
from agevalx.formats.harbor.errors import HarborError
from agevalx.formats.harbor.outcomes import (
    VERIFIER_FAILED,
    VERIFIER_RESULT_INVALID,
    VERIFIER_SANDBOX_FAILED,
    VerifierOutcome,
    VerifierStatus,
    verifier_outcome,
    verifier_timeout,
)
from agevalx.formats.harbor.rewards import InvalidReward, Rewards, finite_rewards
from agevalx.formats.harbor.sandbox import (
    ROOT,
    SANDBOX_ERRORS,
    directory_files,
    home_of,
    reset_verifier_dirs,
    run_shell,
    shell_of,
    tail,
)
from agevalx.formats.harbor.spec import HarborTaskSpec

FIELD = "verifier.import_path"
INSTALL_HINT = 'uv pip install --python "$(command -v python3)" /path/to/verifier-project'
HARBOR_HINT = (
    "install ageval, harbor and the verifier project into one Python >= 3.12: "
    'uv pip install --python "$(command -v python3)" agevalx harbor /path/to/verifier-project'
)
DOWNLOAD_LIMIT = 1 << 30
"""Largest file a verifier can download (Harbor has no limit; the copy is streamed to disk)."""
INVALID_REWARD_ERRORS = (
    "RewardFileNotFoundError",
    "RewardFileEmptyError",
    "VerifierOutputParseError",
)
"""Harbor's reward errors (harbor.verifier.verifier): scored as invalid, as Harbor does."""

_LOGGER = logging.getLogger(__name__)
_T = TypeVar("_T")


def _harbor_base_verifier(file: str | None) -> Any:
    try:
        module = importlib.import_module("harbor.verifier.base")
    except Exception as exc:
        python = f"{sys.executable} (Python {platform.python_version()})"
        too_old = "; Harbor requires Python >= 3.12" if sys.version_info < (3, 12) else ""
        raise HarborError(
            errors.HARBOR_NOT_INSTALLED,
            f"verifier.import_path needs Harbor installed in the Python that runs ageval, "
            f"{python}{too_old} ({type(exc).__name__}: {exc})",
            file=file,
            field=FIELD,
            hint=HARBOR_HINT,
        ) from None
    return module.BaseVerifier


def load_verifier_class(import_path: str, *, file: str | None = None) -> type:
    """Import `module.path:ClassName` as Harbor's `import_class` does; coded errors name
    the field `verifier.import_path` of `file` (the job config)."""
    module_name, _, class_name = import_path.partition(":")
    if not module_name or not class_name:
        raise HarborError(
            errors.JOB_CONFIG_INVALID,
            f"verifier.import_path {import_path!r} is not of the form module.path:ClassName",
            file=file,
            field=FIELD,
            hint="write it as module.path:ClassName",
        )
    base = _harbor_base_verifier(file)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise HarborError(
            errors.VERIFIER_IMPORT_FAILED,
            f"cannot import {module_name!r} of verifier.import_path {import_path!r} "
            f"({type(exc).__name__}: {exc})",
            file=file,
            field=FIELD,
            hint=f"install the package that provides it into this Python: {INSTALL_HINT}",
        ) from None
    found = getattr(module, class_name, None)
    if found is None:
        raise HarborError(
            errors.VERIFIER_IMPORT_FAILED,
            f"module {module_name!r} has no class {class_name!r}",
            file=file,
            field=FIELD,
            hint=f"check the class name, or reinstall the verifier project: {INSTALL_HINT}",
        )
    if not (isinstance(found, type) and issubclass(found, base)) or inspect.isabstract(found):
        raise HarborError(
            errors.VERIFIER_NOT_A_VERIFIER,
            f"{import_path} is not a concrete subclass of Harbor's BaseVerifier",
            file=file,
            field=FIELD,
            hint="derive it from harbor.verifier.base.BaseVerifier and implement "
            "`async def verify(self) -> VerifierResult`",
        )
    return found


class SandboxFailure(RuntimeError):
    """The container failed under a verifier's command or file transfer."""


class VerifierDeadline(TimeoutError):
    """A command was stopped at the verifier's deadline."""


def _absolute(path: str) -> str:
    return posixpath.normpath(posixpath.join("/", path))


class VerifierSandbox:
    """The synchronous half of the environment adapter: Harbor's exec and file transfers
    on one container. Every container call is recorded when it fails (`failure`), so a
    verifier that wraps the error in its own exception still makes the outcome FATAL."""

    def __init__(self, container: AttemptContainer, workdir: str, deadline: float) -> None:
        self.container = container
        self.workdir = workdir
        self.deadline = deadline
        self.failure: BaseException | None = None
        self.deadline_hit = False
        self._shell: str | None = None
        self._homes: dict[str | None, str] = {}

    def _call(self, what: str, action: Callable[[], _T]) -> _T:
        try:
            return action()
        except SANDBOX_ERRORS as exc:
            self.failure = self.failure or exc
            raise SandboxFailure(f"{what}: {exc}") from exc

    def _shell_and_home(self, user: str | None) -> tuple[str, str]:
        if self._shell is None:
            self._shell = shell_of(self.container)
        if user not in self._homes:
            self._homes[user] = home_of(self.container, user)
        return self._shell, self._homes[user]

    def exec(
        self,
        command: str,
        *,
        cwd: str | None,
        env: dict[str, str] | None,
        timeout_sec: float | None,
        user: str | None,
    ) -> ExecResult:
        """`<shell> -c command` in `cwd` (else the task's workdir), HOME from /etc/passwd
        under `env`; the limit is `timeout_sec` (none when 0 or None, as in Harbor's docker
        environment) capped at the verifier's deadline."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            self.deadline_hit = True
            raise VerifierDeadline("the verifier's time is up")
        limit = min(float(timeout_sec), remaining) if timeout_sec else remaining

        def run() -> ExecResult:
            shell, home = self._shell_and_home(user)
            environment = {"HOME": home, **(env or {})}
            workdir = cwd or self.workdir
            return run_shell(
                self.container,
                shell,
                command,
                workdir=workdir,
                environment=environment,
                user=user,
                timeout=limit,
            )

        result = self._call(f"running {command!r}", run)
        if result.timed_out:
            if not timeout_sec or remaining <= timeout_sec:
                self.deadline_hit = True
                raise VerifierDeadline("the verifier's time is up")
            raise RuntimeError(f"Command timed out after {timeout_sec} seconds")
        return result

    def upload_file(self, source: Path, target: str) -> None:
        data, mode = source.read_bytes(), source.stat().st_mode & 0o7777
        parent, name = posixpath.split(_absolute(target))
        if not name:
            raise IsADirectoryError(f"cannot upload a file to {target!r}")
        files = {name: (data, mode)}
        self._call(f"uploading {source}", lambda: self.container.put_files(parent, files))

    def upload_dir(self, source: Path, target: str) -> None:
        """The regular files under `source` (with their modes) into `target`, created."""
        if not source.is_dir():
            raise NotADirectoryError(f"{source} is not a directory")
        files = directory_files(source)
        destination = _absolute(target)
        self._call(f"uploading {source}", lambda: self.container.put_files(destination, files))

    def download_file(self, source: str, target: Path) -> None:
        path = _absolute(source)
        copied = self._call(
            f"downloading {path}",
            lambda: self.container.copy_file(path, target, limit=DOWNLOAD_LIMIT),
        )
        if not copied:
            raise FileNotFoundError(f"{path}: no such file in the environment")

    def download_dir(self, source: str, target: Path) -> None:
        """The content of `source` into `target`; archive members cannot leave `target`."""
        path = _absolute(source)
        target.mkdir(parents=True, exist_ok=True)  # a host-side error is the verifier's

        def copy() -> bool:
            probe = self.container.exec(f"test -d {shlex.quote(path)}", workdir="/", user=ROOT)
            if probe.exit_code != 0:
                return False
            self.container.get_directory(path, target)
            return True

        if not self._call(f"downloading {path}", copy):
            raise FileNotFoundError(f"{path}: no such directory in the environment")


@functools.cache
def _environment_class() -> Any:
    """A Harbor `BaseEnvironment` on a `VerifierSandbox` (Harbor is imported only here)."""
    base = importlib.import_module("harbor.environments.base")
    capabilities = importlib.import_module("harbor.environments.capabilities")

    class AgevalEnvironment(base.BaseEnvironment):  # type: ignore[misc,name-defined]
        """ageval's running container behind Harbor's environment API. Lifecycle belongs
        to ageval (`start`/`stop` do nothing); `exec` merges env as Harbor's docker
        environment does (`_merge_env`: the container env, then `env`, then scoped env)
        and runs as the image's default user unless `user` is given (`[verifier] user` is
        not applied, seed 003)."""

        def __init__(self, sandbox: VerifierSandbox, **kwargs: Any) -> None:
            self._sandbox = sandbox
            super().__init__(**kwargs)

        @staticmethod
        def type() -> str:
            return "ageval"

        @property
        def capabilities(self) -> Any:
            return capabilities.EnvironmentCapabilities(gpus=True)

        @classmethod
        def resource_capabilities(cls) -> Any:
            return capabilities.EnvironmentResourceCapabilities(
                cpu_limit=True, memory_limit=True, fractional_cpus=True
            )

        def _validate_definition(self) -> None:
            """The container is already running: there is nothing to validate."""

        async def start(self, force_build: bool) -> None:
            """ageval started the container."""

        async def stop(self, delete: bool) -> None:
            """ageval removes the container."""

        async def exec(
            self,
            command: str,
            cwd: str | None = None,
            env: dict[str, str] | None = None,
            timeout_sec: int | None = None,
            user: str | int | None = None,
        ) -> Any:
            run_as = self._resolve_user(user)
            result = await asyncio.to_thread(
                self._sandbox.exec,
                command,
                cwd=cwd,
                env=self._merge_env(env),
                timeout_sec=timeout_sec,
                user=None if run_as is None else str(run_as),
            )
            return base.ExecResult(stdout=result.output, stderr=None, return_code=result.exit_code)

        async def upload_file(self, source_path: Path | str, target_path: str) -> None:
            await asyncio.to_thread(self._sandbox.upload_file, Path(source_path), target_path)

        async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
            await asyncio.to_thread(self._sandbox.upload_dir, Path(source_dir), target_dir)

        async def download_file(self, source_path: str, target_path: Path | str) -> None:
            await asyncio.to_thread(self._sandbox.download_file, source_path, Path(target_path))

        async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
            await asyncio.to_thread(self._sandbox.download_dir, source_dir, Path(target_dir))

    return AgevalEnvironment


def _environment_config(task: Any, spec: HarborTaskSpec) -> Any:
    """The task's `[environment]` as ageval resolved it: env and resources final."""
    resources = spec.resources
    return task.config.environment.model_copy(
        update={
            "env": {},
            "tpu": None,
            "workdir": spec.workdir,
            "cpus": resources.cpus,
            "memory_mb": resources.memory_mb,
            "storage_mb": resources.storage_mb,
            "gpus": resources.gpus,
        }
    )


def _verifier(spec: HarborTaskSpec, sandbox: VerifierSandbox, trial_dir: Path) -> Any:
    """The verifier, constructed as Harbor's `VerifierFactory` does for a shared trial."""
    verifier = spec.verifier
    verifier_class = load_verifier_class(str(verifier.import_path))
    task = importlib.import_module("harbor.models.task.task").Task(spec.dir)
    paths = importlib.import_module("harbor.models.trial.paths").TrialPaths(trial_dir)
    paths.mkdir()
    environment = _environment_class()(
        sandbox,
        environment_dir=task.paths.environment_dir,
        environment_name=spec.name,
        session_id=f"{spec.name}__{trial_dir.name[:7]}__env",
        trial_paths=paths,
        task_env_config=_environment_config(task, spec),
        logger=_LOGGER,
        persistent_env=dict(spec.environment_env),
    )
    environment.default_user = None  # `[verifier] user` is not applied (reported)
    return verifier_class(
        task=task,
        trial_paths=paths,
        environment=environment,
        override_env=verifier.env or None,
        logger=_LOGGER,
        verifier_env=None,
        step_name=None,
        **verifier.class_kwargs,
    )


async def _verify(instance: Any, deadline: float) -> Any:
    remaining = max(0.0, deadline - time.monotonic())
    return await asyncio.wait_for(instance.verify(), timeout=remaining)


def checked_rewards(result: Any) -> Rewards:
    """The rewards of a `VerifierResult`: a mapping of finite numbers, as the default
    verifier requires of reward.json (a bool counts as 0.0/1.0)."""
    rewards = getattr(result, "rewards", None)
    if not isinstance(rewards, dict):
        raise InvalidReward(f"the verifier returned no rewards ({result!r:.200})")
    return finite_rewards(rewards, "the verifier's rewards")


def _stdout_tail(trial_dir: Path) -> str:
    path = trial_dir / "verifier" / "test-stdout.txt"
    return tail(path.read_bytes()) if path.is_file() else ""


def _invalid_reward(exc: BaseException) -> bool:
    try:
        module = importlib.import_module("harbor.verifier.verifier")
    except Exception:
        return False
    kinds = tuple(getattr(module, name) for name in INVALID_REWARD_ERRORS)
    return isinstance(exc, kinds)


def _failed(
    exc: Exception, sandbox: VerifierSandbox, spec: HarborTaskSpec, trial_dir: Path, started: float
) -> VerifierOutcome:
    output = _stdout_tail(trial_dir)
    if sandbox.failure is not None:
        message = f"the sandbox failed during verification: {sandbox.failure}"
        return verifier_outcome(VerifierStatus.FATAL, VERIFIER_SANDBOX_FAILED, message, started)
    if sandbox.deadline_hit or isinstance(exc, TimeoutError):
        return verifier_timeout(spec, started, output)
    if _invalid_reward(exc):
        return verifier_outcome(
            VerifierStatus.INVALID, VERIFIER_RESULT_INVALID, str(exc), started, test_output=output
        )
    trace = "".join(traceback.format_exception(exc))
    if trial_dir.is_dir():
        (trial_dir / "exception.txt").write_text(trace, encoding="utf-8")
    message = f"verifier {spec.verifier.import_path} raised {type(exc).__name__}: {exc}"
    return verifier_outcome(
        VerifierStatus.ERROR,
        VERIFIER_FAILED,
        message[:2000],
        started,
        test_output=tail("\n".join(filter(None, (output, trace))).encode()),
        traceback=trace,
    )


def _run(
    container: AttemptContainer,
    spec: HarborTaskSpec,
    deadline: float,
    workdir: str,
    trial_root: Path,
    started: float,
) -> VerifierOutcome:
    trial_dir = trial_root / spec.name / uuid.uuid4().hex
    sandbox = VerifierSandbox(container, workdir, deadline)
    try:
        result = asyncio.run(_verify(_verifier(spec, sandbox, trial_dir), deadline))
        rewards = checked_rewards(result)
    except InvalidReward as exc:
        output = _stdout_tail(trial_dir)
        return verifier_outcome(
            VerifierStatus.INVALID, VERIFIER_RESULT_INVALID, str(exc), started, test_output=output
        )
    except Exception as exc:
        return _failed(exc, sandbox, spec, trial_dir, started)
    return verifier_outcome(
        VerifierStatus.OK,
        None,
        f"rewards from {spec.verifier.import_path}",
        started,
        rewards=rewards,
        test_output=_stdout_tail(trial_dir),
    )


def run_plugin_verifier(
    container: AttemptContainer,
    spec: HarborTaskSpec,
    *,
    deadline: float,
    workdir: str,
    trial_root: Path | None,
    started: float,
) -> VerifierOutcome:
    """Run the spec's verifier class until `deadline` (a `time.monotonic()` value).

    /logs/verifier (and /tests, unless a separate verifier image owns it) are emptied first,
    as for tests/test.sh. The trial directory is `<trial_root>/<task>/<uuid>/`; without a
    root it is a temporary directory, removed afterwards. A sandbox failure is FATAL; a
    timeout TIMEOUT; Harbor's reward errors or rewards that are not finite numbers INVALID;
    any other exception ERROR, its traceback in `exception.txt` and in `test_output`.
    Sandbox failures before the class runs are raised (`SANDBOX_ERRORS`).
    """
    separate = spec.verifier.separate
    reset_verifier_dirs(container, separate is None or not separate.bundled_tests)
    if trial_root is not None:
        return _run(container, spec, deadline, workdir, trial_root, started)
    with tempfile.TemporaryDirectory(prefix="ageval-harbor-trial-") as temporary:
        return _run(container, spec, deadline, workdir, Path(temporary), started)
