"""The seam between task formats and the single attempt pipeline.

A task format is consulted in two places only:

- when tasks are loaded and locked: a `Dataset` of the format lists its tasks and resolves
  each one to a `TaskLock` (the common core plus the format's own section);
- through the hooks of a `TaskRuntime`, which the one attempt runner (runner/stage.py), the one
  evaluator (evaluation/evaluate.py) and replay call: how the environment is prepared, where
  the agent works, the default run and its prompt, the oracle's layout, which verifier scores
  the attempt, and what the job summary adds.

Everything after the lock is format-free and typed.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from agevalx.config.secrets import resolve_reference
from agevalx.errors import AgevalError, AgevalWarning, ConfigError
from agevalx.formats.files import FileDigester
from agevalx.hashing import digest_file
from agevalx.lockfile.request import PROFILES_FILE, BindingRequest

if TYPE_CHECKING:
    from agevalx.agents.base import OracleLayout
    from agevalx.environments.attempt import AttemptEnvironment
    from agevalx.environments.container import AttemptContainer, ContainerSpec
    from agevalx.environments.gpus import GpuRequest
    from agevalx.environments.standby import Network
    from agevalx.evaluation.result import EvaluationResult
    from agevalx.evaluation.session import ScoringSession
    from agevalx.graph.plan import Plan
    from agevalx.lockfile.models import TaskLock
    from agevalx.results.models import AttemptResult
    from agevalx.runner.context import RunContext
    from agevalx.runner.snapshot import SnapshotRoots


RunBody = Callable[["RunContext"], None]
"""What the run stage executes: a task's run.py `run(ctx)`, or the default run."""


class FormatOptions:
    """A task format's own run settings (Harbor's: `formats/harbor/options.py`): made by the
    command line's option parsing, carried untouched by the request and the plan request,
    and read only by the format that opens the dataset (`formats/__init__.py`)."""


@dataclass(frozen=True)
class FormatFigures:
    """What a format adds to a job's summary, as the recap and the viewer show it."""

    headline: str
    """One line for `ageval run`'s recap (Harbor: its metrics under the strategy)."""
    cell: str
    """A short cell for the viewer's table of jobs (Harbor: its primary metric)."""
    warning: str | None = None
    """Why the job's figures are not to be compared, when they are not."""


@dataclass(frozen=True)
class LintReading:
    """What `ageval lint` reads of a format's task directories, with the format's own
    readers and without the host's environment (Harbor's: `formats/harbor/lint.py`)."""

    config_file: str
    """The task's config file (task.toml)."""
    instruction_file: str
    """The file the agent's task is written in (instruction.md)."""
    declares_task: Callable[[Path], bool]
    """Whether a directory is (meant to be) a task of the format."""
    load_task: Callable[[Path], object]
    """The format's reader of one task directory, `${VAR}` templates kept as written;
    raises the coded error a run would stop with."""
    instruction_body: Callable[[str], str]
    """The instruction's text as the agent gets it (Harbor drops leading canary lines)."""
    reported_elsewhere: Callable[[AgevalError], bool]
    """A reader's error that a lint rule of its own reports, with its code and line."""
    verifier_judges: Callable[[Mapping[str, str]], Sequence[object]]
    """The model judges a verifier's env (as written) names; raises `ConfigError` on an
    ambiguous one."""


class Verifier(ABC):
    """Scores one run in a scoring session; never raises for what the task or agent did."""

    @abstractmethod
    def verify(self, session: ScoringSession) -> EvaluationResult:
        """Score the attempt that `session` offers."""


class TaskRuntime(ABC):
    """A locked task as the attempt pipeline asks its format about it."""

    def __init__(self, dataset: Dataset, lock: TaskLock) -> None:
        self.dataset = dataset
        self.lock = lock
        self.task_dir = dataset.task_dir(lock.task_id)

    # -- environment stage ------------------------------------------------------------------

    @abstractmethod
    def container_spec(self, base: ContainerSpec) -> ContainerSpec:
        """The attempt container: `base` (image, name, labels, agent bundles, the bound
        environment options) with the format's settings added (env, resources, ...)."""

    def compose_file(self) -> Path | None:
        """A compose file whose services start beside the attempt container."""
        return None

    def gpu_requests(self) -> list[GpuRequest]:
        """The GPUs the attempt's containers need, checked against the engine's before any
        of them starts: `parameters.gpus` (of `gpu_types`) for the attempt container,
        `parameters.verifier_gpus` (of the same types) for the scoring container.
        `gpu_types` without `gpus` asks for one GPU of those types: a machine without one
        fails the attempt (seed 000), though `docker run` stays as it is."""
        from agevalx.environments.gpus import GpuRequest

        parameters = self.lock.task.parameters
        types = tuple(str(kind) for kind in parameters.get("gpu_types") or ())
        gpus = parameters.get("gpus")
        if gpus is None and types:
            gpus = 1
        return [
            GpuRequest(gpus, types, "the attempt container"),
            GpuRequest(parameters.get("verifier_gpus"), types, "the scoring container"),
        ]

    @abstractmethod
    def prepare(self, environment: AttemptEnvironment, workdir: str, deadline: float) -> None:
        """Make the started environment ready for the agent, before `deadline`
        (`time.monotonic()`): task data, setup scripts, readiness checks."""

    @abstractmethod
    def workdir(self, image: str) -> str:
        """The agent's working directory in a container of `image`."""

    def snapshot_roots(self, workdir: str) -> SnapshotRoots:
        """What a checkpoint keeps: the agent's working directory and HOME."""
        from agevalx.environments.container import HOME
        from agevalx.runner.snapshot import SnapshotRoots

        return SnapshotRoots(workspace=workdir, home=HOME)

    # -- run stage --------------------------------------------------------------------------

    @abstractmethod
    def run_body(self) -> RunBody:
        """run.py's `run`, or the default run: one invocation of the single role with the
        task's prompt."""

    def run_py(self) -> Path | None:
        """The task's own run.py (code from the dataset), which ageval runs in a sandbox
        unless trusted; None when the format runs its default body (ageval's own code)."""
        return None

    def wall_time_seconds(self) -> float:
        """The run stage's wall clock."""
        return float(self.lock.task.limits.wall_time_seconds)

    def agent_environment(self) -> dict[str, str]:
        """Extra environment of the agent processes (values may be secrets)."""
        return {}

    def environment_secrets(self) -> list[str]:
        """The environment values that may be secrets: all of `agent_environment`."""
        return list(self.agent_environment().values())

    def secret_values(self) -> list[str]:
        """Values that must not be recorded anywhere (masked in activity, transcript and
        evaluation records): every environment value ageval hands the task's processes, and
        the roles' resolved API keys."""
        values = self.environment_secrets()
        for role in self.lock.binding.roles.values():
            if role.api_key:
                with contextlib.suppress(AgevalError):
                    values.append(resolve_reference(role.api_key))
        return values

    @abstractmethod
    def oracle(self, container: AttemptContainer, workdir: str) -> OracleLayout:
        """How the built-in oracle runs this task's solution in `container`."""

    def oracle_seed(self) -> str | None:
        """The container directory the built-in oracle's solution/ goes to, when it is known
        before the container starts (its `oracle` layout's target): the run stage then
        copies solution/ in with the attempt directories, in the container's first copy, and
        the oracle's first invocation copies nothing. None: the oracle copies it itself."""
        return None

    @abstractmethod
    def collect_artifacts(self, container: AttemptContainer, workdir: str, into: Path) -> None:
        """Copy the attempt's artifacts out of `container` into the empty directory `into`,
        after the run stage (they are kept with the run)."""

    # -- evaluate stage ---------------------------------------------------------------------

    @abstractmethod
    def verifier(self) -> Verifier:
        """What scores an attempt of this task."""

    def scoring_network(self) -> Network | None:
        """The network of the container the verifier scores in first, when it is known before
        the run ends: a namespace on it is started while the run stage runs
        (`environments.standby`). None: nothing is started ahead."""
        return None


@dataclass
class Dataset(ABC):
    """A loaded dataset of one task format, opened for one command's binding request.

    It is what the planner plans over (a `graph.plan.PlanSource`).
    """

    format_name: ClassVar[str]
    root: Path
    """The dataset directory; `.ageval/` (results, locks, journals) is written under it."""
    display: str
    """The dataset as shown in messages."""
    dataset_id: str
    version: str
    task_ids: tuple[str, ...]
    max_concurrent_tasks: int
    binding: BindingRequest = field(default_factory=BindingRequest)
    """How this command binds agents (`--agent`, `--model`, `--profiles`)."""
    tasks_root: str = "."
    """Where the tasks are, relative to the root."""

    def task_dir(self, task_id: str) -> Path:
        return self.root / self.tasks_root / task_id

    def check_task(self, task_id: str) -> None:
        """Raise `task_not_found` for a task that is not in the dataset."""
        if task_id not in self.task_ids:
            known = ", ".join(self.task_ids[:10]) or "none"
            raise ConfigError(
                "task_not_found",
                f"the dataset has no task {task_id!r}",
                file=self.display
                if self.tasks_root == "."
                else f"{self.display}/{self.tasks_root}",
                field="--task",
                hint=f"--task must equal a task directory name; tasks: {known}",
            )

    def dataset_file(self, name: str) -> Path:
        return self.root / name

    def tasks_outside_root(self) -> tuple[str, ...]:
        """Tasks resolved from outside the root: a cluster worker, which gets only the root's
        files, cannot run them."""
        return ()

    def profiles_path(self) -> Path | None:
        """The profiles file in use: `--profiles`, else the dataset's own profiles.yaml."""
        if self.binding.profiles is not None:
            return self.binding.profiles
        path = self.root / PROFILES_FILE
        return path if path.exists() else None

    def profiles_digest(self) -> dict[str, str] | None:
        path = self.profiles_path()
        if path is None or not path.is_file():
            return None
        digests = {path.name: digest_file(path)}
        overlays = path.parent / "overlays"
        if overlays.is_dir():
            from agevalx.cache.tree import hash_tree

            for entry in hash_tree(overlays).entries:
                if entry.type == "file":
                    digests[f"overlays/{entry.path}"] = str(entry.digest)
        return digests

    def lock_document(self, task_id: str, files: Mapping[str, str]) -> dict[str, Any]:
        root = self.task_dir(task_id)

        def digester(path: Path, _: object) -> str:
            found = files.get(path.relative_to(root).as_posix(), "")
            return found.removesuffix("+x") or digest_file(path)

        return self.lock_task(task_id, digester).document()

    @abstractmethod
    def lock_task(self, task_id: str, digester: FileDigester) -> TaskLock:
        """Validate and resolve one task for this command's binding."""

    @abstractmethod
    def runtime(self, lock: TaskLock) -> TaskRuntime:
        """The hooks of a locked task of this dataset."""

    def warnings(self) -> list[AgevalWarning]:
        """What loading reported (declared settings that are not applied)."""
        return []

    def result_warnings(self, results: list[AttemptResult]) -> list[AgevalWarning]:
        """What the attempts' results report beside their status (a Harbor verifier that left
        no valid reward), for the run's top-level warnings."""
        return []

    def settings_digest(self) -> str | None:
        """Names run-wide format settings in lock keys (a Harbor job config); None: none."""
        return None

    def checkpoints_hold_state(self) -> bool:
        """Whether an attempt's checkpoint (its `snapshot_roots`) holds all the later steps
        and the scoring read, so that a lost environment can be rebuilt from it and a fork
        can start from it. True for a format whose agents work in their workspace and HOME
        by contract."""
        return True

    def metric(self) -> str | None:
        """The job metric the summary is keyed by (a Harbor primary metric and strategy)."""
        return None

    def attempt_strategy(self) -> str:
        """`avg` (every attempt runs) or `pass` (a task stops at its first passed attempt)."""
        return "avg"

    def summary_sections(
        self, task_ids: tuple[str, ...], results: list[AttemptResult]
    ) -> dict[str, Any]:
        """Sections the format adds to a job's summary.json, by name."""
        return {}


def dataset_of(plan: Plan) -> Dataset:
    """The dataset a plan was made over (every plan of ageval's commands has one)."""
    dataset = plan.dataset
    if not isinstance(dataset, Dataset):
        raise TypeError(f"the plan is not over a dataset: {dataset!r}")
    return dataset
