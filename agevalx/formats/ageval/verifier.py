"""An ageval task's verifier: its evaluator.py, run by a small stdlib-only runner.

The scoring container is fresh: the committed image of the attempt container when this engine
still has it, otherwise the task image with the cached workspace and home restored; with
`evaluate_host.isolated: true`, a scoring host of the official CPython image of
`python_version` holding only the harvested workspace. The `evaluation.collect` copies are put
at their paths. Evaluator and task files enter it only now, after the run stage, into a
directory made for this evaluation under a random name (`/.ageval-eval-<nonce>/`), so nothing
the agent left can stand in for them or for the result. In an attempt's container the runner
runs on ageval's own Python, mounted read-only (`evaluation/runtime.py`), not the image's; in
an isolated host (which the agent never touched) on the host's own CPython. It runs as
evaluate_host's user (root when none is set). /tmp is a tmpfs of evaluation.tmpfs_mb. Its
network (and the `egress: llm` fence) is `evaluation/networks.py`'s, as Harbor's verifier's.

Mostly (the committed image is here, no user, no scoring hosts, no `evaluation.collect`
copies: `evaluate_once`), the runner is the container's main process, as `docker run` starts
one: the container is created, the files copied in, and it is started attached to its output;
it ends with the runner. No process of the image runs (not its shell, not its `timeout`), and
the engine does no exec and no kill. Otherwise (`evaluate_in`), the container idles on the
same Python (`IDLE`), and the runner runs by an exec, after the steps that put files in place
(`OWN`, `collect.REPLACE`), which that Python runs as well; the evaluate_seconds limit is kept
on this side (the container is killed).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import tarfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agevalx.environments.container import (
    HOME,
    WORKSPACE,
    AttemptContainer,
    ContainerSpec,
    image_unset_names,
)
from agevalx.environments.engine import EnvironmentFailure
from agevalx.evaluation.hosts import ScoringHosts, exec_with_channel
from agevalx.evaluation.networks import scoring_fence, scoring_network
from agevalx.evaluation.result import OUTPUT_TAIL, EvaluationResult, checked
from agevalx.evaluation.runtime import RUNNER, EvaluatorRuntime, evaluator_runtime
from agevalx.evaluation.session import RunFacts, ScoringSession
from agevalx.formats.base import Verifier
from agevalx.gateway.attempt import AttemptRoutes, judge_environment, judged
from agevalx.gateway.recording import TrafficLog
from agevalx.lockfile.models import TaskLock


@dataclass(frozen=True)
class HostPython:
    """The isolated scoring host's own CPython (an official image nobody else touched)."""

    version: str
    """Its `major.minor` (evaluate_host's python_version)."""

    def command(self, *arguments: str) -> list[str]:
        return ["python3", "-s", *arguments]

    @property
    def environment(self) -> dict[str, str]:
        return {"PYTHONNOUSERSITE": "1"}


Python = EvaluatorRuntime | HostPython


def scoring_spec(lock: TaskLock, name_hint: str) -> ContainerSpec:
    """The scoring container's settings: evaluate_host's options (user, platform and python
    version inherited from the job, never its network or egress), /tmp a tmpfs,
    `verifier_gpus`."""
    host = lock.binding.evaluate_host["environment_options"]
    parameters = lock.task.parameters
    return ContainerSpec(
        image="",
        name_hint=name_hint,
        gpus=parameters.get("verifier_gpus"),
        gpu_types=tuple(str(kind) for kind in parameters.get("gpu_types") or ()),
        network=scoring_network(host),
        user=host.get("user") or lock.binding.environment_options.get("user"),
        tmpfs_mb=lock.task.evaluation.tmpfs_mb,
        platform=host.get("platform"),
    )


def _context_document(
    lock: TaskLock, run: RunFacts, private: str, runtime: Python
) -> dict[str, Any]:
    return {
        "evaluator": f"{private}/task/evaluator.py",
        "workspace": WORKSPACE,
        "home": HOME,
        "task_dir": f"{private}/task",
        "params": lock.task.parameters,
        "limit": run.limit,
        "run": {"invocations": run.invocations, "limit": run.limit},
        "python_version": runtime.version,
        "environments": sorted(lock.task.evaluation.environments),
    }


def evaluate_in(
    container: AttemptContainer,
    task_dir: Path,
    lock: TaskLock,
    run: RunFacts,
    runtime: Python,
    user: str | None = None,
    hosts: ScoringHosts | None = None,
    environment: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Copy the evaluator in, run it as `user` (root when None) within evaluate_seconds,
    with `environment` added to its variables; return its result document.

    The container must have `runtime` mounted (or be a host whose python3 it is). A container
    killed or removed from outside meanwhile is `scoring_environment_lost`, whichever step
    it broke (the copy, the exec, reading the result)."""
    try:
        return _evaluate_in(container, task_dir, lock, run, runtime, user, hosts, environment)
    except EnvironmentFailure as exc:
        if exc.code in (LOST, "evaluate_timeout") or not _lost(container, None, grace=LOST_GRACE):
            raise
        raise _lost_failure(f"{exc.code}: {exc.message}") from None


@dataclass(frozen=True)
class _Evaluation:
    """One evaluation's private directory in the scoring container (a random name, so
    nothing the agent left is written through), and the mark its result is printed after."""

    private: str
    mark: str

    @classmethod
    def new(cls) -> _Evaluation:
        return cls(f"/.ageval-eval-{uuid.uuid4().hex}", f"ageval-result-{uuid.uuid4().hex}")

    def archive(self, task_dir: Path, lock: TaskLock, run: RunFacts, runtime: Python) -> bytes:
        """The tar to extract at `/`: the task's files, the runner and its context."""
        context = {**_context_document(lock, run, self.private, runtime), "result_mark": self.mark}
        files = {
            "evaluate.py": (RUNNER.read_bytes(), 0o644),
            "context.json": (json.dumps(context).encode(), 0o644),
        }
        return evaluation_archive(self.private, task_dir, files)

    def main_command(
        self,
        runtime: Python,
        unset: tuple[str, ...],
        *,
        workspace: str = WORKSPACE,
        home: str = HOME,
    ) -> list[str]:
        """The runner's argv, as a container's main process or an exec's, with no shell to
        prepare its start: a few lines of Python (`MAIN`) remove the `unset` variables from
        the environment, make the workspace and the home and enter the workspace, then run
        the runner as a script."""
        return runtime.command("-c", MAIN, workspace, home, " ".join(unset), *self._arguments)

    @property
    def _arguments(self) -> tuple[str, str, str]:
        private = self.private
        return f"{private}/evaluate.py", f"{private}/context.json", f"{private}/result.json"


MAIN = """\
import os, sys
workspace, home, unset = sys.argv[1], sys.argv[2], sys.argv[3].split()
for name in unset:
    os.environ.pop(name, None)
for path in (workspace, home):
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        pass
os.chdir(workspace)
sys.argv = sys.argv[4:]
with open(sys.argv[0], "rb") as source:
    code = compile(source.read(), sys.argv[0], "exec")
exec(code, {"__name__": "__main__", "__file__": sys.argv[0], "__builtins__": __builtins__})
"""
"""What the evaluator's Python runs (`-c`) before the runner, in a one-shot scoring container
and in `evaluate_in`'s exec alike: main_environment's variables, blanked in the committed
image, are not the evaluator's (seed 000: unset, not merely empty); the workspace and home
the runner expects. No program of the image's takes part: the agent had that image in hand,
and a shell or `timeout` of its making would see the runner's result line and its result.json
before ageval does."""


IDLE = "import signal\nwhile True: signal.pause()"
"""A scoring container's main process while its evaluator runs by exec (`evaluate_in`)."""


OWN = """\
import os, sys

def number(path, name, index):
    with open(path, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            fields = line.rstrip("\\n").split(":")
            if len(fields) > 3 and fields[0] == name and fields[index].isdigit():
                return int(fields[index])
    sys.exit(f"ageval: no {name!r} in {path} (evaluate_host's user)")

owner, colon, group = sys.argv[1].partition(":")
uid = int(owner) if owner.isdigit() else number("/etc/passwd", owner, 2)
gid = -1
if group:
    gid = int(group) if group.isdigit() else number("/etc/group", group, 2)
elif colon and not owner.isdigit():
    gid = number("/etc/passwd", owner, 3)
for top in sys.argv[2:]:
    os.makedirs(top, exist_ok=True)
    os.chown(top, uid, gid, follow_symlinks=False)
    if os.path.islink(top):
        continue
    for root, directories, files in os.walk(top):
        for name in directories + files:
            os.chown(os.path.join(root, name), uid, gid, follow_symlinks=False)
"""
"""`chown -R USER[:GROUP] PATH...` (each path made first), run as root by the evaluator's
Python: the names are read from the image's /etc/passwd and /etc/group as text (no lookup
through the image's libraries), and no link is followed."""


def evaluate_once(
    container: AttemptContainer, evaluation: _Evaluation, archive: bytes, seconds: float
) -> dict[str, Any]:
    """Run a created one-shot scoring container (`ScoringSession.one_shot_container`, its
    command `evaluation.main_command`): the evaluation's files copied in before it starts,
    its output read attached, as `docker run` does, up to the runner's result line; its
    result document. Nothing of the image runs but the runner (no shell, no `timeout`), and
    the container ends with it."""
    try:
        container.put_archive("/", archive)
        result = container.run_attached(timeout=seconds, until=evaluation.mark.encode())
        if result.timed_out:
            raise _timeout_failure(seconds)
        if result.exit_code in KILLED_EXITS and container.lost():
            raise _lost_failure(f"the evaluator's container ended with {result.exit_code}")
    except EnvironmentFailure as exc:
        if exc.code in (LOST, "evaluate_timeout") or not _lost(container, None):
            raise
        raise _lost_failure(f"{exc.code}: {exc.message}") from None
    return _result_document(container, evaluation, result.exit_code, result.output)


def _timeout_failure(seconds: float) -> EnvironmentFailure:
    return EnvironmentFailure(
        "evaluate_timeout", f"evaluator.py did not finish within {seconds} s (evaluate_seconds)"
    )


def _result_document(
    container: AttemptContainer, evaluation: _Evaluation, exit_code: int, output: str
) -> dict[str, Any]:
    """The result the runner printed after its mark, else its result.json (read from the
    container, which may have stopped), else an ERROR."""
    output, printed = printed_result(output, evaluation.mark)
    raw = (
        printed if printed is not None else container.read_file(f"{evaluation.private}/result.json")
    )
    if raw is None:
        return {
            "status": "ERROR",
            "error": {
                "type": "EvaluatorDidNotRun",
                "message": f"the evaluator runner exited with {exit_code}",
            },
            "evaluator_output": output[-OUTPUT_TAIL:],
        }
    document: dict[str, Any] = json.loads(raw)
    document["evaluator_output"] = output[-OUTPUT_TAIL:]
    return document


def _evaluate_in(
    container: AttemptContainer,
    task_dir: Path,
    lock: TaskLock,
    run: RunFacts,
    runtime: Python,
    user: str | None,
    hosts: ScoringHosts | None,
    environment: dict[str, str] | None,
) -> dict[str, Any]:
    evaluation = _Evaluation.new()
    container.put_archive("/", evaluation.archive(task_dir, lock, run, runtime))
    if user:  # the runner writes its result in its private directory
        container.python_exec(runtime, OWN, user, WORKSPACE, HOME, evaluation.private)
    seconds = lock.task.limits.evaluate_seconds
    variables = {**(environment or {}), **runtime.environment}
    command = evaluation.main_command(runtime, container.unset_names())
    if hosts is None:
        result = container.exec_argv(
            command, timeout=seconds, user=user or "root", environment=variables
        )
    else:
        result = exec_with_channel(
            container,
            command,
            hosts.answer,
            workdir="/",
            timeout=seconds,
            user=user or "root",
            environment=variables,
        )
        if hosts.failure is not None:
            raise hosts.failure
    if result.timed_out:  # the container was killed for it
        raise _timeout_failure(seconds)
    if _lost(container, result.exit_code):  # killed or removed from outside meanwhile
        raise _lost_failure(f"the evaluator's exec ended with {result.exit_code}")
    return _result_document(container, evaluation, result.exit_code, result.output)


def printed_result(output: str, mark: str) -> tuple[str, str | None]:
    """The evaluator's output without the result line the runner printed after `mark`, and
    that result (None when the line is not there whole, as when the output kept is cut: the
    result is then read from result.json)."""
    start = output.rfind(f"\n{mark} ")
    if start < 0:
        return output, None
    end = output.find("\n", start + 1)
    line = output[start + len(mark) + 2 : end if end >= 0 else len(output)]
    try:
        if not isinstance(json.loads(line), dict):
            return output, None
    except json.JSONDecodeError:
        return output, None
    rest = output[end + 1 :] if end >= 0 else ""
    return output[:start] + rest, line


KILLED_EXITS = frozenset({126, 137, 143})
"""Exit codes of an exec whose process was killed (SIGKILL, SIGTERM) or could not start (126:
the runtime's exec failed), as when its container goes."""
LOST_GRACE = 3.0
"""Seconds a killed exec's container gets to be seen stopped by the engine."""


LOST = "scoring_environment_lost"


def _lost_failure(cause: str) -> EnvironmentFailure:
    return EnvironmentFailure(
        LOST,
        f"the scoring container stopped or was removed while evaluator.py ran ({cause})",
        hint="not the agent's fault: ageval run --retry-infra scores the attempt again",
    )


def _lost(container: AttemptContainer, exit_code: int | None, grace: float = 0.0) -> bool:
    """Whether the scoring container stopped or went while the evaluator ran; an exec that
    ended as killed gives it `LOST_GRACE` to be seen stopped."""
    return container.lost(LOST_GRACE if exit_code in KILLED_EXITS else grace)


def evaluation_archive(private: str, task_dir: Path, files: dict[str, tuple[bytes, int]]) -> bytes:
    """One tar to extract at `/`: the directory `private` (mode 700, root's), the task's files
    in its `task/` (symlinks kept as links) and `files` beside them. It makes the directory
    and fills it in one copy; its random name means nothing the agent left is written
    through."""
    root = private.strip("/")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        top = tarfile.TarInfo(root)
        top.type, top.mode = tarfile.DIRTYPE, 0o700
        archive.addfile(top)
        archive.add(task_dir, arcname=f"{root}/task", recursive=True)
        for name, (content, mode) in sorted(files.items()):
            info = tarfile.TarInfo(f"{root}/{name}")
            info.size, info.mode = len(content), mode
            archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


class EvaluatorPy(Verifier):
    """Scores with the task's evaluator.py in a container of the attempt's final filesystem,
    or in an isolated scoring host."""

    def verify(self, session: ScoringSession) -> EvaluationResult:
        session.check_collection()
        with contextlib.ExitStack() as stack:
            routes = judge_routes(session.lock, stack, session.judge_traffic)
            return judged(self._verify(session, routes), routes)

    def _verify(self, session: ScoringSession, routes: AttemptRoutes) -> EvaluationResult:
        started = time.monotonic()
        spec = scoring_spec(session.lock, f"eval-{session.attempt_id}")
        spec = dataclasses.replace(spec, attempt_dirs=False)  # `evaluate_in` makes them
        runtime: Python
        if session.host_image is None:
            runtime = evaluator_runtime(session.cache_dir)
            # idle on the runtime, not on the image's `sleep` (nor under its entrypoint): no
            # program of an image the agent had in hand runs beside the evaluator
            spec = dataclasses.replace(
                spec,
                mounts=(*spec.mounts, runtime.mount),
                command=tuple(runtime.command("-c", IDLE)),
                environment=(*spec.environment, *sorted(runtime.environment.items())),
            )
        else:
            host = session.lock.binding.evaluate_host["environment_options"]
            runtime = HostPython(version=str(host.get("python_version", "3.12")))
        fence = scoring_fence(session.lock, session.attempt_id, routes.gateway_port)
        if fence is not None:
            spec = fence.behind(spec)
        environment = {}
        role = session.lock.task.evaluation.judge
        if role is not None:
            profile = session.lock.binding.roles[role].model_dump(mode="json")
            environment = judge_environment(routes, role, profile)
        try:
            return self._verify_in(
                session, spec, runtime, started, environment, fenced=fence is not None
            )
        finally:
            if fence is not None:
                fence.close()

    def _verify_in(
        self,
        session: ScoringSession,
        spec: ContainerSpec,
        runtime: Python,
        started: float,
        environment: dict[str, str],
        *,
        fenced: bool,
    ) -> EvaluationResult:
        names = sorted(session.lock.task.evaluation.environments)
        hosted = bool(names) and session.environment_image is not None
        if not spec.user and not hosted:
            document = self._verify_once(session, spec, runtime, environment, fenced=fenced)
            if document is not None:
                return _finished(document, started)
        # The user is the runner's alone: the container's own setup would chown its
        # directories by the image's shell (`OWN` does it with the evaluator's Python).
        container = session.scoring_container(dataclasses.replace(spec, user=None), runtime)
        hosts = None
        if hosted and session.environment_image is not None:
            hosts = ScoringHosts(names, session.environment_image, session.start, spec)
        try:
            document = evaluate_in(
                container,
                session.task_dir,
                session.lock,
                session.run,
                runtime,
                spec.user,
                hosts,
                environment,
            )
        finally:  # a fence's network goes only once its container is gone
            session.discard(container, later=not fenced)
        return _finished(document, started)

    def _verify_once(
        self,
        session: ScoringSession,
        spec: ContainerSpec,
        runtime: Python,
        environment: dict[str, str],
        *,
        fenced: bool,
    ) -> dict[str, Any] | None:
        """Score in a container whose main process is the runner (`evaluate_once`), when
        the session can offer one (no user to own the files, no scoring hosts to talk to,
        nothing to put in place by a command); None otherwise."""
        if session.attempt_image is None or session.host_image is not None:
            return None
        evaluation = _Evaluation.new()
        unset = image_unset_names(session.attempt_image)
        if unset is None:  # gone from this engine: the task image and the snapshots
            return None
        once = dataclasses.replace(
            spec,
            command=tuple(evaluation.main_command(runtime, unset)),
            workdir=WORKSPACE,
            # the runtime's own variables are the spec's already (`_verify`)
            environment=(*spec.environment, *sorted(environment.items())),
        )
        container = session.one_shot_container(once)
        if container is None:
            return None
        try:
            archive = evaluation.archive(session.task_dir, session.lock, session.run, runtime)
            seconds = session.lock.task.limits.evaluate_seconds
            return evaluate_once(container, evaluation, archive, seconds)
        finally:
            session.discard(container, later=not fenced)


def _finished(document: dict[str, Any], started: float) -> EvaluationResult:
    document["seconds"] = round(time.monotonic() - started, 3)
    document.pop("usage", None)  # counted by the gateway, never taken from the evaluator
    return checked(document)


def judge_routes(
    lock: TaskLock, stack: contextlib.ExitStack, log: TrafficLog | None = None
) -> AttemptRoutes:
    """The gateway route of this evaluation's LLM judge (`evaluation.judge`, when its role
    has a model `base_url`), on the process's gateway until `stack` closes, its traffic
    recorded in `log`; else none."""
    role = lock.task.evaluation.judge
    bound = lock.binding.roles.get(role) if role is not None else None
    if role is None or bound is None or not bound.base_url:
        return AttemptRoutes.none()
    from agevalx.gateway.server import shared_gateway  # aiohttp: only a judge with a model

    gateway = stack.enter_context(shared_gateway())
    routes = AttemptRoutes(gateway, {role: bound.model_dump(mode="json")}, log)
    stack.callback(routes.close)
    return routes
