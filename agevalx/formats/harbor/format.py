"""The Harbor task format (seed 003): task.toml, instruction.md, environment/, tests/.

A Harbor task runs through the same attempt pipeline as an ageval task; these are its hooks:
the container gets the task's resources and `[environment.env]`; preparing it copies
environment/ into the workdir of a prebuilt image, creates /logs and runs the healthcheck; the
agent works in the task's workdir (its image's WORKDIR when it sets none) with instruction.md
as its prompt and the Harbor agent timeout as its wall clock; the oracle runs solve.sh as
Harbor's oracle agent does; Harbor's verifier scores (tests/test.sh, a verifier class, or a
separate verifier environment).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agevalx.agents.base import OracleLayout
from agevalx.environments.attempt import AttemptEnvironment
from agevalx.environments.container import (
    HOME,
    PRIVATE,
    WORKSPACE,
    AttemptContainer,
    ContainerSpec,
)
from agevalx.environments.gpus import GpuRequest
from agevalx.errors import AgevalError, AgevalWarning, ConfigError
from agevalx.evaluation.result import OUTPUT_TAIL, EvaluationResult, checked
from agevalx.evaluation.session import ScoringSession
from agevalx.formats.base import Dataset, RunBody, TaskRuntime, Verifier
from agevalx.formats.files import FileDigester
from agevalx.formats.harbor.dataset import (
    HarborSource,
    declares_tasks,
    harbor_lock,
    listed_tasks,
    slug,
)
from agevalx.formats.harbor.envvars import from_host
from agevalx.formats.harbor.images import image_workdir
from agevalx.formats.harbor.judges import VerifierJudge, verifier_judges
from agevalx.formats.harbor.options import HarborOptions
from agevalx.formats.harbor.outcomes import (
    VERIFIER_FAILED,
    VERIFIER_SANDBOX_FAILED,
    VerifierOutcome,
    VerifierStatus,
)
from agevalx.formats.harbor.sandbox import (
    AGENT_LOGS,
    check_log_dirs,
    collect_artifacts,
    container_spec,
    home_of,
    prepare_environment,
)
from agevalx.formats.harbor.scoring import AttemptScore, score_outcome
from agevalx.formats.harbor.separate import verify_separately
from agevalx.formats.harbor.spec import HarborTaskSpec
from agevalx.formats.harbor.summary import attempt_warnings, harbor_summary
from agevalx.formats.harbor.verifier import ORACLE_LOG, SOLVE_SCRIPT, healthcheck, run_verifier
from agevalx.gateway.attempt import CONTAINER_HOST, AttemptRoutes, judged
from agevalx.lockfile.binding import bind_single_role
from agevalx.lockfile.models import TaskLock
from agevalx.lockfile.request import BindingRequest
from agevalx.runner.snapshot import SnapshotRoots

if TYPE_CHECKING:
    from agevalx.environments.standby import Network
    from agevalx.gateway.recording import TrafficLog

SANDBOX_RETRIES = 2
"""Further tries of a verification whose sandbox failed (Harbor's FATAL)."""
NO_TIMEOUT = 86400.0
"""The wall clock of a task whose agent has no timeout."""


@dataclass
class HarborDataset(Dataset):
    """Harbor tasks: a task directory, a directory of tasks and/or a job config's sources."""

    format_name = "harbor"
    source: HarborSource | None = None
    task_dirs: dict[str, Path] = field(default_factory=dict)
    """Tasks that do not live under the root (a job config's `datasets`/`tasks`)."""
    loaded_warnings: list[AgevalWarning] = field(default_factory=list)

    @property
    def options(self) -> HarborOptions:
        assert self.source is not None
        return self.source.options

    def task_dir(self, task_id: str) -> Path:
        return self.task_dirs.get(task_id) or self.root / task_id

    def tasks_outside_root(self) -> tuple[str, ...]:
        # A job config's `datasets`/`tasks` are resolved from its own paths, even under the root.
        return self.task_ids if self.options.has_job_sources else tuple(sorted(self.task_dirs))

    def task_spec(self, task_id: str, *, templates: bool = False) -> HarborTaskSpec:
        """The resolved task (env templates from the host, unless `templates`)."""
        assert self.source is not None
        spec = self.source.spec(task_id, self.task_dir(task_id), templates)
        if spec.failure is not None:
            raise ConfigError(
                spec.failure.code, spec.failure.message, file=str(spec.dir / "task.toml")
            )
        return spec

    def lock_task(self, task_id: str, digester: FileDigester) -> TaskLock:
        self.check_task(task_id)
        binding = bind_single_role(self, self.binding, self.task_dir(task_id))
        spec = self.task_spec(task_id, templates=True)
        verifier_judges(spec.verifier.env, str(spec.dir / "task.toml"))
        return harbor_lock(self, spec, binding, digester, self.options.dataset_name)

    def runtime(self, lock: TaskLock) -> TaskRuntime:
        return HarborRuntime(self, lock)

    def warnings(self) -> list[AgevalWarning]:
        """What loading reported, then what the tasks resolved since reported about their
        task.toml (`harbor_task_field_unapplied`, e.g. `[verifier] user`)."""
        found = list(self.loaded_warnings)
        if self.source is not None:
            found += [AgevalWarning(**w.model_dump()) for w in self.source.task_warnings()]
        return list(dict.fromkeys(found))

    def result_warnings(self, results: list[Any]) -> list[AgevalWarning]:
        return [AgevalWarning(**w.model_dump()) for w in attempt_warnings(results)]

    def settings_digest(self) -> str | None:
        return self.options.digest()

    def checkpoints_hold_state(self) -> bool:
        """False: the verifier reads the whole container (a file the agent wrote in /etc, a
        package it installed, /logs), and a checkpoint holds the workdir and HOME only. So an
        attempt whose environment was lost is redone from its start, and a fork starts from
        the source's committed image, not from a filesystem without what the agent did
        elsewhere."""
        return False

    def metric(self) -> str | None:
        return f"{self.options.primary_metric}/{self.options.effective_strategy}"

    def attempt_strategy(self) -> str:
        return self.options.effective_strategy

    def summary_sections(self, task_ids: tuple[str, ...], results: list[Any]) -> dict[str, Any]:
        options = self.options
        summary = harbor_summary(
            task_ids, results, options.primary_metric, options.effective_strategy
        )
        summary = summary.model_copy(update={"dataset_name": options.dataset_name})
        return {"harbor": summary.model_dump(mode="json")}


def open_harbor(
    path: Path | None, options: HarborOptions | None, binding: BindingRequest
) -> HarborDataset | None:
    """A Harbor task directory, a directory of tasks and/or a job config's `datasets`/`tasks`
    as a dataset; None when `path` is neither and no Harbor options were given."""
    if options is None and not declares_tasks(path):
        return None
    options = options or HarborOptions()
    source = HarborSource(path, options)
    disabled = source.job_config is not None and source.job_config.config.verifier.disable
    listed = listed_tasks(path, disabled)
    task_dirs: dict[str, Path] = {}
    if options.has_job_sources or listed is None:
        job = source.load(path, templates=True)
        task_ids = tuple(spec.name for spec in job.tasks)
        task_dirs = {spec.name: spec.dir for spec in job.tasks}
        root = listed.root if listed else (path if path is not None else options.base_dir)
        warnings = list(job.warnings)
    else:
        root, task_ids = listed.root, listed.task_ids
        warnings = [*options.warnings, *listed.warnings]
    name = root.resolve().name
    if path is None and options.job_config and not options.job_config.lstrip().startswith("{"):
        name = Path(options.job_config).stem
    return HarborDataset(
        root=root,
        display=root.as_posix(),
        dataset_id=f"harbor/{slug(name)}"[:128],
        version="harbor",
        task_ids=task_ids,
        max_concurrent_tasks=1,
        binding=binding,
        source=source,
        task_dirs={k: v for k, v in task_dirs.items() if v != (root / k).resolve()},
        loaded_warnings=[AgevalWarning(**w.model_dump()) for w in warnings],
    )


class HarborRuntime(TaskRuntime):
    """A Harbor task's hooks, over the task resolved with the host's environment."""

    dataset: HarborDataset

    def __init__(self, dataset: HarborDataset, lock: TaskLock) -> None:
        super().__init__(dataset, lock)
        self.spec = dataset.task_spec(lock.task_id)

    def container_spec(self, base: ContainerSpec) -> ContainerSpec:
        """The task's resources and container env; the attempt's directories are made by
        `prepare`, in the exec that makes /logs (a container with a `user` makes them as it
        starts, owned by that user)."""
        own = container_spec(self.spec, base.image, base.name_hint)
        return dataclasses.replace(
            base,
            cpus=own.cpus,
            memory_mb=own.memory_mb,
            gpus=own.gpus,
            gpu_types=own.gpu_types,
            environment=own.environment,
            attempt_dirs=False,
        )

    def gpu_requests(self) -> list[GpuRequest]:
        """The task's GPUs (`[environment] gpus`, the job's `override_gpus`, `--env-params`
        `resources.gpus`, of `gpu_types`) for the agent's container and, in shared mode, for
        the verifier's; a separate verifier environment's own `gpus` for its container."""
        spec = self.spec
        requests = [GpuRequest(spec.resources.gpus, spec.gpu_types, "the task container")]
        separate = spec.verifier.separate
        if separate is not None and separate.own is not None:
            gpus = separate.own.resources.gpus
            requests.append(GpuRequest(gpus, spec.gpu_types, "the verifier environment"))
        return requests

    def prepare(self, environment: AttemptEnvironment, workdir: str, deadline: float) -> None:
        container = environment.container
        prepare_environment(container, self.spec, workdir=workdir, also=(WORKSPACE, HOME, PRIVATE))
        if self.spec.healthcheck is not None:
            healthcheck(container, self.spec, workdir=workdir)

    def workdir(self, image: str) -> str:
        return self.spec.workdir or image_workdir(image) or "/"

    def snapshot_roots(self, workdir: str) -> SnapshotRoots:
        """The workdir and HOME; a task working in `/` keeps no workspace tree (only a
        surviving container, or the committed image, holds its files)."""
        roots = super().snapshot_roots(workdir)
        return roots if workdir.rstrip("/") else dataclasses.replace(roots, workspace=WORKSPACE)

    def wall_time_seconds(self) -> float:
        return self.spec.agent_timeout_sec or NO_TIMEOUT

    def run_body(self) -> RunBody:
        instruction = self.spec.instruction

        def default_run(ctx: Any) -> None:
            ctx.invoke(ctx.roles[0], instruction)

        return default_run

    def agent_environment(self) -> dict[str, str]:
        """`[environment.env]` (also the container's) and the job's `agents[0].env`."""
        return {**self.spec.environment_env, **self.spec.agent_env}

    def environment_secrets(self) -> list[str]:
        """The env values that came from the host: every value a `${VAR}` template took from
        a set host variable (seed 003 resolves them from the host; any may be a key; a
        `${VAR:-default}` falling back to its default is not one), in the container's, the
        agent's, the solution's, the verifier's and a separate verifier environment's env.
        A value written literally in task.toml or the job config is not a secret."""
        written = self.dataset.task_spec(self.lock.task_id, templates=True)
        pairs = [
            (written.environment_env, self.spec.environment_env),
            (written.agent_env, self.spec.agent_env),
            (written.solution_env, self.spec.solution_env),
            (written.verifier.env, self.spec.verifier.env),
        ]
        separate, written_separate = self.spec.verifier.separate, written.verifier.separate
        if separate is not None and separate.own is not None:
            own = written_separate.own if written_separate is not None else None
            pairs.append((own.environment_env if own else {}, separate.own.environment_env))
        return [
            value
            for templates, resolved in pairs
            for key, value in resolved.items()
            if key not in templates or from_host(templates[key], os.environ)
        ]

    def oracle(self, container: AttemptContainer, workdir: str) -> OracleLayout:
        """Harbor's oracle agent: solution/ to /solution, `chmod +x`, solve.sh run directly
        with its output in /logs/agent/oracle.txt, the exec user's HOME,
        DEBIAN_FRONTEND=noninteractive, the agent env and `[solution].env` on top; the time
        left truncated to whole seconds."""
        return OracleLayout(
            target=str(Path(SOLVE_SCRIPT).parent),
            setup=f"mkdir -p {AGENT_LOGS} && chmod 777 {AGENT_LOGS} && chmod +x {SOLVE_SCRIPT}",
            command=f"({SOLVE_SCRIPT}) > {ORACLE_LOG} 2>&1",
            home=home_of(container, None),
            environment={
                "DEBIAN_FRONTEND": "noninteractive",
                **self.spec.agent_env,
                **self.spec.solution_env,
            },
            output_file=ORACLE_LOG,
            whole_seconds=True,
        )

    def collect_artifacts(self, container: AttemptContainer, workdir: str, into: Path) -> None:
        """/logs/artifacts and the declared `[[artifacts]]`, as Harbor's trial collects them,
        once /logs and /logs/agent are known to be directories still."""
        directories = check_log_dirs(container, self.spec)
        collect_artifacts(container, self.spec, into, directories)

    def scoring_network(self) -> Network | None:
        """The scoring host's network when test.sh or a verifier class scores in a container
        of the attempt's filesystem (a separate verifier environment starts its own)."""
        verifier = self.spec.verifier
        if self.spec.failure is not None or verifier.disabled or verifier.separate is not None:
            return None
        from agevalx.evaluation.networks import standby_network  # lazily, as the verifier

        return standby_network(self.lock)

    def verifier(self) -> Verifier:
        """Harbor's verifier; the model endpoints of its env (`agevalx.formats.harbor.judges`) are
        routed through the model gateway."""
        written = self.dataset.task_spec(self.lock.task_id, templates=True)
        return HarborVerifier(
            self.spec, verifier_judges(written.verifier.env, str(written.dir / "task.toml"))
        )


class HarborVerifier(Verifier):
    """Harbor's verifier: tests/test.sh (or the job's verifier class) in a container of the
    attempt's final filesystem, or in a separate verifier environment that gets the attempt's
    artifacts. A sandbox failure (FATAL) is tried again in new containers.

    Its `judges` (model endpoints of the verifier env) are routed through the model gateway:
    the verifier sees the gateway's URL and a per-evaluation token instead of the endpoint
    and the real key; their usage is the result's `usage` (`evaluator_usage`), and an
    upstream that never recovered makes the evaluation an ERROR, not a FAIL."""

    def __init__(
        self,
        spec: HarborTaskSpec,
        judges: list[VerifierJudge] | None = None,
        gateway_port: int | None = None,
    ) -> None:
        self.spec = spec
        self.judges = judges or []
        self.gateway_port = gateway_port
        """The model gateway's port, relayed by an `egress: llm` fence of the scoring host."""

    def verify(self, session: ScoringSession) -> EvaluationResult:
        started = time.monotonic()
        with contextlib.ExitStack() as stack:
            routes, spec = route_judges(self.spec, self.judges, stack, session.judge_traffic)
            routed = HarborVerifier(spec, gateway_port=routes.gateway_port if routes else None)
            try:
                outcome = verify_with_retries(lambda: routed._verify_once(session))
            except AgevalError:
                raise
            except Exception as exc:  # the verifier's code raised: ERROR, its traceback kept
                outcome = VerifierOutcome(
                    status=VerifierStatus.ERROR,
                    code=VERIFIER_FAILED,
                    message=f"the verifier raised {type(exc).__name__}: {exc}"[:2000],
                    traceback="".join(traceback.format_exception(exc)),
                )
            seconds = time.monotonic() - started
            result = result_document(outcome, score_outcome(outcome), seconds)
            return judged(result, routes, timed_out=outcome.status == VerifierStatus.TIMEOUT)

    def _attempt(self, session: ScoringSession) -> AttemptContainer:
        return session.attempt_container(self._scoring_spec(session), full_filesystem=True)

    def _scoring_spec(self, session: ScoringSession) -> ContainerSpec:
        """A container of the attempt's final filesystem, as it is: the attempt's directories
        are not made again (Harbor's verifier never uses them)."""
        spec = container_spec(self.spec, "", f"scoring-{session.attempt_id}")
        return dataclasses.replace(spec, attempt_dirs=False)

    def _verify_once(self, session: ScoringSession) -> VerifierOutcome:
        trials = session.trials_dir
        if self.spec.verifier.separate is not None:
            return verify_separately(
                self.spec,
                session.artifacts or (lambda into: self._collect(session, into)),
                lambda view: self._verifier_container(session, view),
                trial_root=trials,
            )
        from agevalx.evaluation.networks import scoring_fence, scoring_network  # lazily

        host = session.lock.binding.evaluate_host["environment_options"]
        fence = scoring_fence(session.lock, session.attempt_id, self.gateway_port)
        spec = self._scoring_spec(session)
        if fence is not None:
            spec = fence.behind(spec)
        else:
            spec = dataclasses.replace(spec, network=scoring_network(host))
        try:
            container = session.attempt_container(spec, full_filesystem=True)
            try:
                workdir = session.run.workdir or "/"
                return run_verifier(container, self.spec, workdir=workdir, trial_root=trials)
            finally:  # a fence's network goes only once its container is gone
                session.discard(container, later=fence is None)
        finally:
            if fence is not None:
                fence.close()

    def _collect(self, session: ScoringSession, into: Path) -> None:
        source = self._attempt(session)
        try:
            collect_artifacts(source, self.spec, into)
        finally:
            session.discard(source)

    def _verifier_container(
        self, session: ScoringSession, view: HarborTaskSpec
    ) -> tuple[AttemptContainer, str]:
        image = session.scoring_image("verifier")
        container = session.start(container_spec(view, image, f"verifier-{session.attempt_id}"))
        return container, view.workdir or image_workdir(image) or "/"


def route_judges(
    spec: HarborTaskSpec,
    judges: list[VerifierJudge],
    stack: contextlib.ExitStack,
    log: TrafficLog | None,
) -> tuple[AttemptRoutes | None, HarborTaskSpec]:
    """A gateway route per judge, open until `stack` closes, its traffic recorded in `log`;
    and `spec` with the verifier env pointing at them: `<P>BASE_URL` is the gateway's URL
    (as the container sees the host; the bridge address for a verifier class, which runs on
    the host) and `<P>API_KEY` the route's token. Without judges, no routes (None)."""
    if not judges:
        return None, spec
    from agevalx.gateway.routes import Upstream
    from agevalx.gateway.server import shared_gateway  # aiohttp: only a verifier with judges

    env = dict(spec.verifier.env)
    file = str(spec.dir / "task.toml")
    upstreams = [
        (judge, Upstream(base_url=judge.endpoint(env, file), api_key=env.get(judge.key_name)))
        for judge in judges
    ]
    gateway = stack.enter_context(shared_gateway())
    routes = AttemptRoutes(gateway, {}, log)
    stack.callback(routes.close)
    host = None if spec.verifier.import_path is not None else CONTAINER_HOST
    for judge, upstream in upstreams:
        route = routes.add(judge.role, upstream)
        env[judge.base_url_name] = gateway.base_url(route, host)
        if judge.has_key:
            env[judge.key_name] = route.token
    verifier = spec.verifier.model_copy(update={"env": env})
    return routes, spec.model_copy(update={"verifier": verifier})


def verify_with_retries(
    verify: Callable[[], VerifierOutcome], retries: int = SANDBOX_RETRIES
) -> VerifierOutcome:
    """A FATAL verification (the sandbox failed, not the verifier) is tried again, in a new
    container; still FATAL after `retries`, the attempt is void: `verifier_sandbox_failed`,
    and the job's Harbor summary says it has no official score."""
    outcome = verify()
    for _ in range(retries):
        if outcome.status != VerifierStatus.FATAL:
            return outcome
        outcome = verify()
    if outcome.status == VerifierStatus.FATAL:
        raise AgevalError(
            VERIFIER_SANDBOX_FAILED,
            f"the sandbox failed while verifying, {retries + 1} times: {outcome.message}",
            hint="the attempt has no score and the job no official score; check the Docker "
            "engine, then run again (the agent's run is reused)",
        )
    return outcome


def result_document(
    outcome: VerifierOutcome, scored: AttemptScore | None, seconds: float
) -> EvaluationResult:
    """A verification as an evaluation result (seed 003's scoring rules)."""
    details: dict[str, Any] = {"verifier": str(outcome.status), "exit_code": outcome.exit_code}
    output = outcome.test_output[-OUTPUT_TAIL:]
    if scored is None:  # the verifier raised: the attempt has no score
        return checked(
            {
                "status": "ERROR",
                "error": {
                    "type": outcome.code or "verifier_failed",
                    "message": outcome.message or "the verifier failed",
                    "traceback": outcome.traceback or outcome.test_output,
                },
                "details": details,
                "seconds": round(seconds, 3),
                "evaluator_output": output,
            }
        )
    details.update(
        passed=scored.passed,
        warning=scored.warning,
        extra={"eval_raw_data": {"rewards": dict(scored.rewards)}},
    )
    if scored.warning is not None and outcome.message:
        details["message"] = outcome.message
    return checked(
        {
            "status": {True: "PASS", False: "FAIL", None: "DONE"}[scored.passed],
            "score": scored.score,
            "details": details,
            "seconds": round(seconds, 3),
            "evaluator_output": output,
        }
    )
