"""The soak dataset: N generated tasks that real pi solves or fails by design, for the soak test
(tests/integration/longrun/test_soak.py) and its benchmark (benchmarks/bench_longrun.py).

Each task's prompt holds a line `RUN: <command>`. The mock model (`MockLLM(SCRIPT,
per_conversation=True)`) answers every conversation with the same two turns: a bash tool call
running that command (`{{run}}` is replaced by the text after `RUN: ` in the request's first
user message), then "done". The command writes `answer.txt`; evaluator.py, in the scoring
container, PASSes when it holds the expected line. A seeded subset of the tasks
(`designed_to_fail`) gets a command that writes another line, so those FAIL on every attempt
and pass@k is not trivially 1.0; the outcome of a task never depends on the attempt.

Every task has the same environment/Dockerfile (one image node for the whole job); the tasks
carry a salt, so their attempt ids (and the Docker objects labelled with them) belong to one
soak run alone.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import yaml

MODEL = "soak-model"
"""The model id the job asks for (the mock serves any)."""

SCRIPT: list[dict[str, Any]] = [
    {"tool_call": {"name": "bash", "arguments": {"command": "{{run}}"}}},
    {"message": "done"},
]
"""The mock's replies for each conversation (see `MockLLM(per_conversation=True)`)."""

TURNS_PER_ATTEMPT = len(SCRIPT)
"""Model requests one attempt makes when nothing fails."""

ANSWER_FILE = "answer.txt"
FAIL_FRACTION = 1 / 3
"""Share of the tasks designed to fail."""

Status = Literal["PASS", "FAIL"]

DATASET_YAML = {
    "format": "ageval.dataset/1",
    "dataset_id": "tests/soak",
    "version": "1",
    "tasks": {"root": "tasks"},
}
DOCKERFILE = "FROM ageval/base:bookworm\nWORKDIR /attempt/workspace\n"
PROMPT = "Run this command in your working directory, exactly as written.\n\nRUN: {command}\n"
EVALUATOR = '''"""PASS when the command the prompt gave wrote the expected line to answer.txt."""
import time


def evaluate(ctx):
    time.sleep(1)  # a window for the soak to remove a scoring container while it runs
    path = ctx.workspace / ctx.params["output"]
    got = path.read_text().strip() if path.is_file() else None
    ok = got == ctx.params["expected"]
    status = "PASS" if ok else "FAIL"
    return {"status": status, "score": 1.0 if ok else 0.0, "details": {"got": got}}
'''


@dataclass(frozen=True)
class SoakTask:
    """One generated task and the outcome it is designed to have."""

    task_id: str
    command: str
    designed: Status


@dataclass(frozen=True)
class SoakDataset:
    """A written soak dataset."""

    root: Path
    tasks: tuple[SoakTask, ...]

    def designed(self) -> dict[str, Status]:
        """Task id -> the status every attempt of it must end with."""
        return {task.task_id: task.designed for task in self.tasks}

    def designed_pass_at(self, k: int) -> float:
        """pass@k of the designed outcomes: the share of tasks designed to pass (an outcome
        never varies between attempts, so pass@k is the same for every k)."""
        del k
        passing = sum(task.designed == "PASS" for task in self.tasks)
        return passing / len(self.tasks)


def designed_to_fail(tasks: int, seed: int) -> frozenset[int]:
    """The indices of the tasks whose command writes another line: a seeded `FAIL_FRACTION`
    of them (at least one, never all when there are two or more)."""
    count = max(1, round(tasks * FAIL_FRACTION)) if tasks > 1 else 0
    return frozenset(random.Random(seed).sample(range(tasks), count))


def profiles(
    base_url: str, *, watchdog: float, stall_seconds: int, egress: str | None
) -> dict[str, Any]:
    """profiles.yaml: `--agent pi` binds this profile (the real pi bundle, entry `pi`) with the
    mock as its endpoint, behind the gateway with a short `model.watchdog` (a stalled stream
    is cut after `watchdog` seconds of silence)."""
    document: dict[str, Any] = {
        "format": "ageval.profiles/1",
        "environment": "docker",
        "agent_profiles": {
            "pi": {
                "executor": "acp",
                "api_key": "${OPENAI_API_KEY}",
                "base_url": base_url,
                "model": {"id": MODEL, "watchdog": watchdog},
                "options": {
                    "entry": "pi",
                    "provider": "openai",
                    "upstream_stall_seconds": stall_seconds,
                },
            }
        },
    }
    if egress is not None:
        document["environment_options"] = {"egress": egress}
    return document


def write_soak_dataset(
    root: Path,
    tasks: int,
    *,
    base_url: str,
    seed: int = 26,
    salt: str = "",
    watchdog: float = 3.0,
    stall_seconds: int = 600,
    egress: str | None = "llm",
) -> SoakDataset:
    """Write `tasks` soak tasks under `root` (see the module docstring); the model at
    `base_url` (the mock's `url`) must serve `SCRIPT` per conversation."""
    failing = designed_to_fail(tasks, seed)
    root.mkdir(parents=True, exist_ok=True)
    _write(root / "ageval.yaml", yaml.safe_dump(DATASET_YAML, sort_keys=False))
    document = profiles(base_url, watchdog=watchdog, stall_seconds=stall_seconds, egress=egress)
    _write(root / "profiles.yaml", yaml.safe_dump(document, sort_keys=False))
    made = []
    for index in range(tasks):
        task_id = f"soak-{index:03d}"
        expected = f"{task_id}-ok"
        written = f"{task_id}-wrong" if index in failing else expected
        command = f"echo {written} > {ANSWER_FILE} && cat {ANSWER_FILE}"
        task_yaml = {
            "format": "ageval.task/1",
            "task_id": task_id,
            "description": "Run the command of the prompt (the soak test's mock model does).",
            "parameters": {"command": command, "expected": expected, "output": ANSWER_FILE},
            "agent_profiles": [{"id": "solver"}],
            "limits": {"wall_time_seconds": 600, "agent_invocations": 1},
            "evaluation": {"inputs": [ANSWER_FILE]},
            "provenance": {"salt": salt},
        }
        directory = root / "tasks" / task_id
        _write(directory / "task.yaml", yaml.safe_dump(task_yaml, sort_keys=False))
        _write(directory / "prompts" / "task.md", PROMPT.format(command=command))
        _write(directory / "evaluator.py", EVALUATOR)
        _write(directory / "environment" / "Dockerfile", DOCKERFILE)
        made.append(SoakTask(task_id, command, "FAIL" if index in failing else "PASS"))
    return SoakDataset(root, tuple(made))


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def default_faults(attempts: int) -> list[dict[str, Any]]:
    """The mock's faults for the last invocation of a faulty job (`SoakJob(late_faults=...)`
    adds them as it starts, counted from the next request): a stalled stream (cut by the
    profile's watchdog), then a burst of 429s as wide as the job's concurrency and a run of
    503s (Retry-After 1 each), so that the invocation that writes summary.json meets them
    and its gateway figures show the concurrency falling on the 429s and recovering. Each
    refused request is held and sent again after the gateway's fixed 60 s interval, so the
    bursts are short; `attempts` widens them for a large job."""
    burst = max(MAX_CONCURRENT, attempts // 75)
    return [
        {"kind": "stall", "at": [1], "seconds": 30},
        {"kind": "429", "start": 3, "count": burst, "retry_after": 1},
        {"kind": "503", "start": 3 + 2 * burst, "count": 2, "retry_after": 1},
    ]


def summary_statuses(results: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Task id -> the statuses of its attempts, sorted, from `--json` results."""
    statuses: dict[str, list[str]] = {}
    for result in results:
        statuses.setdefault(str(result["task_id"]), []).append(str(result["status"]))
    return {task: sorted(found) for task, found in sorted(statuses.items())}


def dump(value: Any) -> str:
    """`value` as indented JSON, for assertion messages."""
    return json.dumps(value, indent=2, sort_keys=True, default=str)


# --- running a soak job ------------------------------------------------------------------

AGENT_PROCESS = "pi-acp"
"""A word of the agent's command line in the attempt container (pi's ACP adapter)."""

POLL_SECONDS = 0.1
KILL_FRACTIONS = (0.25, 0.0)
"""The job is killed (SIGKILL) twice: once the mock has received these fractions of the
requests a fault-free job makes (the second as soon as the second invocation has requests in
flight, so the last invocation still has most of the job to meet its faults)."""
MAX_CONCURRENT = 4
"""The soak job's --max-concurrent."""
IN_FLIGHT_BEFORE_KILL = 2
"""Requests an invocation sends before it may be killed (a job too small to reach them after
its first kill ends before its second one: the soak needs about 10 tasks or more)."""


class Upstream(Protocol):
    """What a soak job reads of its mock model (`MockLLM`)."""

    @property
    def url(self) -> str: ...

    @property
    def completions(self) -> Sequence[Any]: ...

    def add_faults(self, faults: Sequence[Mapping[str, Any]]) -> None: ...


@dataclass
class Fault:
    """A fault the job injected from outside."""

    kind: Literal["container_killed", "scoring_removed", "ageval_killed"]
    seconds: float
    """When, from the job's start."""
    attempt_id: str | None = None
    """The attempt whose container was hit (None for a kill of ageval)."""
    pid: int | None = None
    """The ageval process killed."""


@dataclass
class SoakOutcome:
    """A finished soak job: its last invocation's `--json` document and what it went through."""

    dataset: SoakDataset
    k: int
    document: dict[str, Any]
    exit_code: int
    seconds: float
    pids: list[int]
    """Every ageval process the job ran, in order (the killed ones first)."""
    faults: list[Fault] = field(default_factory=list)

    @property
    def attempts(self) -> int:
        return len(self.dataset.tasks) * self.k

    @property
    def results(self) -> list[dict[str, Any]]:
        return list(self.document.get("results") or [])

    def summary(self) -> dict[str, Any]:
        """The job's summary.json."""
        path = self.document.get("summary_path")
        assert path, f"the job wrote no summary.json: {dump(self.document)[:4000]}"
        return dict(json.loads(Path(path).read_text(encoding="utf-8")))

    def stored_results(self) -> dict[str, dict[str, Any] | None]:
        """Attempt directory name (the attempt id) -> its result.json (None when it has none):
        every attempt the job started, ended or not."""
        runs = self.dataset.root / ".ageval" / "runs"
        found: dict[str, dict[str, Any] | None] = {}
        for directory in sorted(runs.iterdir()) if runs.is_dir() else []:
            path = directory / "result.json"
            found[directory.name] = json.loads(path.read_text()) if path.is_file() else None
        return found

    @property
    def attempts_per_minute(self) -> float:
        return self.attempts * 60 / self.seconds


class SoakJob:
    """`ageval run DATASET --agent pi -k K --retry-infra 2 --json`, as a subprocess (the way a
    user runs it), with the mock model at `upstream`; see `run` and `run_with_faults`."""

    def __init__(
        self,
        dataset: SoakDataset,
        upstream: Upstream,
        *,
        k: int,
        cache_dir: Path,
        bundles_dir: Path,
        max_concurrent: int = MAX_CONCURRENT,
        log_dir: Path | None = None,
        late_faults: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self.dataset = dataset
        self.upstream = upstream
        self.k = k
        self.cache_dir = cache_dir
        self.bundles_dir = bundles_dir
        self.max_concurrent = max_concurrent
        self.log_dir = log_dir or dataset.root.parent
        self.late_faults = list(late_faults)
        """The mock's faults for the last invocation (`default_faults`), added as it starts."""
        self.pids: list[int] = []
        self.faults: list[Fault] = []
        self._started = 0.0

    @property
    def attempts(self) -> int:
        return len(self.dataset.tasks) * self.k

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "agevalx",
            "run",
            str(self.dataset.root),
            "--agent",
            "pi",
            "--model",
            MODEL,
            "-k",
            str(self.k),
            "--retry-infra",
            "2",
            "--max-concurrent",
            str(self.max_concurrent),
            "--json",
        ]

    def environment(self) -> dict[str, str]:
        """This environment with the job's cache, the agent bundles' folder (pi's is built
        there beforehand) and a key for the profile's `${OPENAI_API_KEY}` (the mock checks
        none)."""
        return {
            **os.environ,
            "AGEVAL_CACHE_DIR": str(self.cache_dir),
            "AGEVAL_BUNDLES_DIR": str(self.bundles_dir),
            "OPENAI_API_KEY": "sk-soak-not-a-real-key",
        }

    def _start(self) -> subprocess.Popen[bytes]:
        number = len(self.pids)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with (
            open(self.log_dir / f"ageval-{number}.out", "wb") as out,
            open(self.log_dir / f"ageval-{number}.err", "wb") as err,
        ):
            process = subprocess.Popen(
                self.command(), stdout=out, stderr=err, env=self.environment()
            )
        self.pids.append(process.pid)
        return process

    def _output(self, number: int) -> dict[str, Any]:
        text = (self.log_dir / f"ageval-{number}.out").read_text(encoding="utf-8")
        if not text.strip():
            error = (self.log_dir / f"ageval-{number}.err").read_text(encoding="utf-8")
            raise AssertionError(f"ageval printed nothing; stderr:\n{error[-4000:]}")
        return dict(json.loads(text))

    def _elapsed(self) -> float:
        return time.monotonic() - self._started

    def run(self, timeout: float = 3600) -> SoakOutcome:
        """The job with no fault from outside."""
        self._started = time.monotonic()
        process = self._start()
        code = process.wait(timeout)
        return self._outcome(code)

    def run_with_faults(self, timeout: float = 3600) -> SoakOutcome:
        """The job with faults from outside: `kill -9` of ageval twice (at `KILL_FRACTIONS`
        of the job's requests, each once the invocation has requests in flight), the same
        command run again after each; the last invocation meets the mock's `late_faults`,
        `docker kill` of an attempt container while its agent runs and `docker rm -f` of a
        scoring container while evaluator.py runs, and runs to its end."""
        self._started = time.monotonic()
        deadline = self._started + timeout
        expected_requests = self.attempts * TURNS_PER_ATTEMPT
        for number, fraction in enumerate(KILL_FRACTIONS):
            process = self._start()
            before = len(self.upstream.completions)
            while not self._kill_point(fraction * expected_requests, before):
                if process.poll() is not None:
                    raise AssertionError(
                        f"ageval ended (exit {process.returncode}) before its kill -9 at "
                        f"{fraction:.0%} of the requests; faults so far: {self.faults}; "
                        f"{self._output(number).get('error')}"
                    )
                if time.monotonic() > deadline:
                    raise AssertionError(f"the soak job outlived {timeout} s")
                time.sleep(POLL_SECONDS)
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
            self.faults.append(Fault("ageval_killed", self._elapsed(), pid=process.pid))
        if self.late_faults:
            self.upstream.add_faults(self.late_faults)
        process = self._start()
        while process.poll() is None and time.monotonic() < deadline:
            self._hit_containers(process.pid)
            time.sleep(POLL_SECONDS)
        code = process.wait(max(1.0, deadline - time.monotonic()))
        return self._outcome(code)

    def _kill_point(self, requests: float, before: int) -> bool:
        """Whether to kill the running invocation now: the mock has received `requests`,
        and this invocation has sent `IN_FLIGHT_BEFORE_KILL` requests since it began
        (`before`: the count then), so attempts are in flight."""
        received = len(self.upstream.completions)
        return received >= requests and received >= before + IN_FLIGHT_BEFORE_KILL

    def _outcome(self, code: int) -> SoakOutcome:
        return SoakOutcome(
            dataset=self.dataset,
            k=self.k,
            document=self._output(len(self.pids) - 1),
            exit_code=code,
            seconds=self._elapsed(),
            pids=list(self.pids),
            faults=list(self.faults),
        )

    def _hit_containers(self, pid: int) -> None:
        """Kill one attempt container whose agent runs, then remove one scoring container,
        each once, among the containers of ageval process `pid`."""
        done = {fault.kind for fault in self.faults}
        if "container_killed" not in done:
            for container in _containers(pid, "attempt", running=True):
                if _agent_runs(container["Id"]):
                    _docker("kill", container["Id"])
                    self._record("container_killed", container)
                    break
        if "scoring_removed" not in done:
            for container in _containers(pid, "scoring", running=True):
                _docker("rm", "-f", container["Id"])
                self._record("scoring_removed", container)
                break

    def _record(self, kind: Literal["container_killed", "scoring_removed"], c: Any) -> None:
        attempt = (c.get("Labels") or {}).get("ageval.attempt")
        self.faults.append(Fault(kind, self._elapsed(), attempt_id=attempt))


def _docker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=False)


def _containers(pid: int, kind: str, *, running: bool) -> list[dict[str, Any]]:
    """Containers of ageval process `pid` labelled `ageval=<kind>` (the engine's summaries)."""
    from agevalx.environments.engine import client

    filters = {"label": [f"ageval={kind}", f"ageval.owner.pid={pid}"]}
    if running:
        filters["status"] = ["running"]
    found = client().api.containers(all=not running, filters=filters)
    return list(found or [])


def _agent_runs(container: str) -> bool:
    """Whether the agent's process runs in `container` (read from its /proc)."""
    listing = _docker(
        "exec", container, "sh", "-c", "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '"
    )
    return listing.returncode == 0 and AGENT_PROCESS in listing.stdout


def left_behind(pids: Sequence[int], attempt_ids: Sequence[str]) -> dict[str, list[str]]:
    """Containers and networks still on the engine that the job's ageval processes (`pids`)
    made, or that are labelled with one of its attempts: names by kind."""
    from agevalx.environments.engine import client

    api = client().api
    containers: dict[str, str] = {}
    networks: dict[str, str] = {}
    labels = [f"ageval.owner.pid={pid}" for pid in pids]
    labels += [f"ageval.attempt={attempt}" for attempt in attempt_ids]
    for label in labels:
        for container in api.containers(all=True, filters={"label": label}) or []:
            containers[container["Id"]] = ",".join(container.get("Names") or [container["Id"]])
        for network in api.networks(filters={"label": label}) or []:
            networks[network["Id"]] = network.get("Name", network["Id"])
    return {"containers": sorted(containers.values()), "networks": sorted(networks.values())}
