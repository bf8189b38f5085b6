"""Verifier, healthcheck and oracle logic against a scripted fake container (no Docker)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest

from agevalx.environments.container import AttemptContainer, ContainerSpec, ExecResult
from agevalx.environments.engine import EnvironmentFailure
from agevalx.environments.gpus import GpuRequest
from agevalx.formats.harbor import (
    HarborRunError,
    RunOverrides,
    VerifierStatus,
    collect_artifacts,
    healthcheck,
    load_harbor_tasks,
    run_verifier,
)
from agevalx.formats.harbor import errors as codes
from agevalx.formats.harbor.format import open_harbor
from agevalx.formats.harbor.options import HarborOptions
from agevalx.formats.harbor.sandbox import (
    HOME_MARK,
    KIND,
    REPLACED,
    SHELL_PROBE,
    check_log_dirs,
    home_of,
    prepare_environment,
)
from agevalx.formats.harbor.spec import HarborTaskSpec
from agevalx.fsutil import write_inside
from agevalx.lockfile.binding import BindingRequest
from agevalx.lockfile.models import TaskLock
from tests.unit.harbor.builders import BASE_TOML, TaskFactory

pytestmark = pytest.mark.unit

Responder = Callable[[str], ExecResult | None]


@dataclass
class Call:
    command: str
    workdir: str
    environment: dict[str, str]
    user: str | None
    timeout: float | None


@dataclass
class FakeContainer:
    """Answers `exec` from `responders` (first non-None wins, else exit 0)."""

    files: dict[str, bytes] = field(default_factory=dict)
    responders: list[Responder] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    uploads: list[tuple[Path, str]] = field(default_factory=list)
    executable: list[str] = field(default_factory=list)
    """Uploaded files that arrive executable (`put_directory(executable=)`)."""
    has_bash: bool = True
    stopped: bool = False
    default_home: str | None = None
    """What a setup exec found (`prepare_environment`); None: `home_of` asks."""

    def running(self) -> bool:
        return not self.stopped

    def default_user(self) -> str:
        return ""  # root

    def exec(
        self,
        command: str,
        *,
        timeout: float | None = None,
        workdir: str = "/attempt/workspace",
        environment: dict[str, str] | None = None,
        user: str | None = None,
    ) -> ExecResult:
        self.calls.append(Call(command, workdir, dict(environment or {}), user, timeout))
        for responder in self.responders:
            answer = responder(command)
            if answer is not None:
                return answer
        if command.endswith(f"{SHELL_PROBE}; }}") or command == SHELL_PROBE:
            home = f"{HOME_MARK}/root\n" if HOME_MARK in command else ""
            return ExecResult(0, home + ("bash\n" if self.has_bash else "sh\n"))
        if command.startswith("getent passwd"):
            return ExecResult(0, "/root\n")
        return ExecResult(0, "")

    def put_directory(
        self, source: Path, destination: str, *, executable: tuple[str, ...] = ()
    ) -> None:
        self.uploads.append((source, destination))
        self.executable.extend(f"{destination}/{name}" for name in executable)

    def get_directory(self, path: str, destination: Path) -> None:
        destination.mkdir(parents=True, exist_ok=True)
        (destination / "copied-from.txt").write_text(path)

    def read_file(self, path: str, limit: int = 1 << 20) -> bytes | None:
        return self.files.get(path)

    def copy_file(
        self, path: str, target: Path, limit: int | None = None, *, root: Path | None = None
    ) -> bool:
        if path not in self.files:
            return False
        if root is None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(self.files[path])
        else:
            write_inside(root, target, [self.files[path]])
        return True

    def runs(self, needle: str) -> list[Call]:
        return [call for call in self.calls if needle in call.command]


def _spec(
    make_task: TaskFactory, tmp_path: Path, toml: str = BASE_TOML, **run: Any
) -> HarborTaskSpec:
    make_task("t", toml=toml)
    loaded = load_harbor_tasks(tmp_path / "dataset", overrides=RunOverrides(**run), environ={})
    return loaded.tasks[0]


def _as_container(fake: FakeContainer) -> AttemptContainer:
    return cast(AttemptContainer, fake)


# --- run_verifier ----------------------------------------------------------------------------


def test_verifier_runs_test_sh_directly_and_reads_reward_json_first(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    toml = BASE_TOML + 'workdir = "/app"\n\n[verifier]\nuser = "grader"\nenv = { K = "v" }\n'
    spec = _spec(make_task, tmp_path, toml)
    fake = FakeContainer(
        files={
            "/logs/verifier/reward.json": b'{"reward": 1, "extra": 0.5}',
            "/logs/verifier/reward.txt": b"0",
            "/logs/verifier/test-stdout.txt": b"all good\n",
        },
        responders=[lambda c: ExecResult(7, "") if "/tests/test.sh)" in c else None],
    )
    outcome = run_verifier(_as_container(fake), spec)
    assert outcome.status == VerifierStatus.OK
    assert outcome.rewards == {"reward": 1, "extra": 0.5} and outcome.reward_file == "reward.json"
    assert outcome.exit_code == 7 and outcome.test_output == "all good\n"
    reset, run = fake.runs("rm -rf"), fake.runs("test-stdout")
    assert "/tests /logs/verifier" in reset[0].command and reset[0].user == "root"
    # the image's default user's home, asked in the reset's root exec (no exec of its own);
    # test.sh arrives executable in the upload (no chmod exec)
    assert HOME_MARK in reset[0].command and not fake.runs('getent passwd "$(id -u)"')
    assert not fake.runs("chmod +x") and fake.executable == ["/tests/test.sh"]
    assert run[0].command.startswith("bash -c ")
    assert "(/tests/test.sh) > /logs/verifier/test-stdout.txt 2>&1" in run[0].command
    assert (run[0].workdir, run[0].user) == ("/app", None)  # `[verifier] user`: not applied
    assert run[0].environment == {"HOME": "/root", "K": "v"}
    assert fake.uploads == [(spec.dir / "tests", "/tests")]


def test_reward_txt_when_there_is_no_json(make_task: TaskFactory, tmp_path: Path) -> None:
    fake = FakeContainer(files={"/logs/verifier/reward.txt": b"0.25\n"})
    outcome = run_verifier(_as_container(fake), _spec(make_task, tmp_path))
    assert outcome.rewards == {"reward": 0.25} and outcome.reward_file == "reward.txt"


@pytest.mark.parametrize(
    "files",
    [
        {},
        {"/logs/verifier/reward.txt": b""},
        {"/logs/verifier/reward.json": b"{oops"},
        {"/logs/verifier/reward.json": b"", "/logs/verifier/reward.txt": b"1"},
        {"/logs/verifier/reward.json": b'{"reward": 1' + b"0" * 400 + b"}"},
        {"/logs/verifier/reward.txt": b"1" + b"0" * 400},
    ],
)
def test_missing_or_bad_reward_is_an_invalid_warning(
    make_task: TaskFactory, tmp_path: Path, files: dict[str, bytes]
) -> None:
    outcome = run_verifier(_as_container(FakeContainer(files=files)), _spec(make_task, tmp_path))
    assert outcome.status == VerifierStatus.INVALID
    assert outcome.code == "verifier_result_invalid" and outcome.severity == "warning"


def test_timeout_reads_no_reward(make_task: TaskFactory, tmp_path: Path) -> None:
    timed_out = ExecResult(137, "", timed_out=True)
    fake = FakeContainer(
        files={"/logs/verifier/reward.txt": b"1"},
        responders=[lambda c: timed_out if "test-stdout" in c else None],
    )
    toml = BASE_TOML + "\n[verifier]\ntimeout_sec = 9.0\n"
    outcome = run_verifier(_as_container(fake), _spec(make_task, tmp_path, toml))
    assert outcome.status == VerifierStatus.TIMEOUT and outcome.rewards is None
    assert 0 < (fake.runs("test-stdout")[0].timeout or 0) <= 9.0


def test_sandbox_failure_is_fatal(make_task: TaskFactory, tmp_path: Path) -> None:
    def broken(command: str) -> ExecResult | None:
        raise EnvironmentFailure("exec_failed", "docker exec failed")

    outcome = run_verifier(
        _as_container(FakeContainer(responders=[broken])), _spec(make_task, tmp_path)
    )
    assert outcome.status == VerifierStatus.FATAL and outcome.severity == "fatal"
    assert outcome.code == "verifier_sandbox_failed"


def test_failed_housekeeping_is_fatal(make_task: TaskFactory, tmp_path: Path) -> None:
    fake = FakeContainer(responders=[lambda c: ExecResult(1, "ro fs") if "rm -rf" in c else None])
    outcome = run_verifier(_as_container(fake), _spec(make_task, tmp_path))
    assert outcome.status == VerifierStatus.FATAL


def test_sh_when_the_image_has_no_bash(make_task: TaskFactory, tmp_path: Path) -> None:
    fake = FakeContainer(has_bash=False, files={"/logs/verifier/reward.txt": b"1"})
    run_verifier(_as_container(fake), _spec(make_task, tmp_path))
    assert fake.runs("test-stdout")[0].command.startswith("sh -c ")


def test_unresolved_variable_and_disabled_verifier(make_task: TaskFactory, tmp_path: Path) -> None:
    toml = BASE_TOML + '\n[verifier]\nenv = { KEY = "${NOT_SET_ANYWHERE}" }\n'
    fake = FakeContainer()
    outcome = run_verifier(_as_container(fake), _spec(make_task, tmp_path, toml))
    assert outcome.status == VerifierStatus.ERROR and outcome.code == codes.ENV_UNRESOLVED
    assert fake.calls == []


# --- healthcheck -----------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


HEALTH = BASE_TOML + (
    '\n[environment.healthcheck]\ncommand = "probe"\ninterval_sec = 2.0\n'
    "start_period_sec = 5.0\nstart_interval_sec = 1.0\nretries = 3\ntimeout_sec = 4.0\n"
)


def _exit_codes(*codes_: int) -> Responder:
    remaining = list(codes_)
    return lambda c: ExecResult(remaining.pop(0), "") if c.endswith("probe") else None


def test_healthcheck_failures_in_the_start_period_do_not_count(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    clock = Clock()
    fake = FakeContainer(responders=[_exit_codes(1, 1, 1, 1, 1, 1, 1, 0)])
    spec = _spec(make_task, tmp_path, HEALTH)
    result = healthcheck(_as_container(fake), spec, clock=clock, sleep=clock.sleep)
    # t=0..4: five start-period failures (1 s apart); t=5, 7: two counted failures; t=9 ok.
    assert result.checks == 8
    assert clock.sleeps == [1.0] * 5 + [2.0, 2.0]
    assert fake.runs("probe")[0].timeout == 4


def test_healthcheck_fails_after_consecutive_retries(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    clock = Clock()
    fake = FakeContainer(responders=[lambda c: ExecResult(1, "") if c.endswith("probe") else None])
    spec = _spec(make_task, tmp_path, HEALTH)
    with pytest.raises(HarborRunError) as caught:
        healthcheck(_as_container(fake), spec, clock=clock, sleep=clock.sleep)
    assert caught.value.code == codes.HEALTHCHECK_FAILED
    assert clock.sleeps == [1.0] * 5 + [2.0, 2.0]


def test_healthcheck_timeout_fails_at_once(make_task: TaskFactory, tmp_path: Path) -> None:
    clock = Clock()
    slow = ExecResult(137, "", timed_out=True)
    fake = FakeContainer(responders=[lambda c: slow if c.endswith("probe") else None])
    with pytest.raises(HarborRunError) as caught:
        healthcheck(
            _as_container(fake), _spec(make_task, tmp_path, HEALTH), clock=clock, sleep=clock.sleep
        )
    assert caught.value.code == codes.HEALTHCHECK_TIMEOUT and clock.sleeps == []


def test_no_healthcheck_runs_nothing(make_task: TaskFactory, tmp_path: Path) -> None:
    fake = FakeContainer()
    assert healthcheck(_as_container(fake), _spec(make_task, tmp_path)).checks == 0
    assert fake.calls == []


# --- oracle ----------------------------------------------------------------------------------


def test_oracle_layout_layers_env_and_ignores_agent_user(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    toml = BASE_TOML.replace("[agent]\n", '[agent]\nuser = "dev"\n') + (
        'workdir = "/w"\nenv = { A = "env", B = "env", DEBIAN_FRONTEND = "dialog" }\n'
        '\n[solution.env]\nB = "solution"\n'
    )
    make_task("t", toml=toml)
    options = HarborOptions.build(env_params='{"agent_env": {"C": "agent", "B": "agent"}}')
    dataset = open_harbor(tmp_path / "dataset", options, BindingRequest(agent="oracle"))
    assert dataset is not None
    runtime = dataset.runtime(TaskLock.model_validate(dataset.lock_document("t", {})))
    layout = runtime.oracle(_as_container(FakeContainer()), "/w")
    assert (layout.target, layout.output_file, layout.home) == (
        "/solution",
        "/logs/agent/oracle.txt",
        "/root",
    )
    assert layout.command == "(/solution/solve.sh) > /logs/agent/oracle.txt 2>&1"
    assert layout.whole_seconds and layout.setup is not None and "chmod +x" in layout.setup
    environ = {**runtime.agent_environment(), **layout.environment}
    assert environ == {
        "A": "env",
        "B": "solution",
        "C": "agent",
        "DEBIAN_FRONTEND": "noninteractive",
    }
    assert runtime.workdir("any-image") == "/w"


# --- artifacts -------------------------------------------------------------------------------


def test_artifacts_mirror_their_source_paths(make_task: TaskFactory, tmp_path: Path) -> None:
    toml = BASE_TOML + (
        '\n[[artifacts]]\nsource = "/out/report.json"\n'
        '\n[[artifacts]]\nsource = "/data"\ndestination = "renamed"\n'
        '\n[[artifacts]]\nsource = "/missing"\n'
    )
    directories = {"/logs/artifacts", "/data"}
    fake = FakeContainer(
        files={"/out/report.json": b"{}"},
        responders=[
            lambda c: (
                ExecResult(0 if c.split()[-1].strip("'") in directories else 1, "")
                if c.startswith("test -d")
                else None
            )
        ],
    )
    target = tmp_path / "artifacts"
    found = collect_artifacts(_as_container(fake), _spec(make_task, tmp_path, toml), target)
    assert found == ["/logs/artifacts", "/out/report.json", "/data"]
    assert (target / "logs/artifacts/copied-from.txt").read_text() == "/logs/artifacts"
    assert (target / "out/report.json").read_bytes() == b"{}"
    assert (target / "renamed/copied-from.txt").read_text() == "/data"


def test_the_log_check_asks_which_artifacts_are_directories_in_the_same_exec(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    toml = BASE_TOML + (
        '\n[[artifacts]]\nsource = "/out/report.json"\n'
        '\n[[artifacts]]\nsource = "/data"\ndestination = "renamed"\n'
    )
    spec = _spec(make_task, tmp_path, toml)
    answer = "".join(f"{KIND}{kind}\n" for kind in "d-d")
    fake = FakeContainer(
        files={"/out/report.json": b"{}"},
        responders=[lambda c: ExecResult(0, answer) if "[ -d /logs" in c else None],
    )
    directories = check_log_dirs(_as_container(fake), spec)
    assert directories == [True, False, True]
    (probe,) = fake.calls
    assert "[ -d /out/report.json ]" in probe.command and "[ -d /data ]" in probe.command
    target = tmp_path / "artifacts"
    found = collect_artifacts(_as_container(fake), spec, target, directories)
    assert found == ["/logs/artifacts", "/out/report.json", "/data"]
    assert (target / "renamed/copied-from.txt").read_text() == "/data"
    assert not fake.runs("test -d"), "no exec per entry"
    # an answer that is not whole (an entry's line missing): each entry is asked apart
    fake = FakeContainer(
        responders=[lambda c: ExecResult(0, f"{KIND}d\n") if "[ -d /logs" in c else None]
    )
    assert check_log_dirs(_as_container(fake), spec) is None


def test_a_test_sh_that_stops_the_container_is_a_sandbox_failure(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    spec = _spec(make_task, tmp_path)
    fake = FakeContainer(stopped=True)  # no reward: the container died under test.sh
    outcome = run_verifier(_as_container(fake), spec)
    assert (outcome.status, outcome.code) == (VerifierStatus.FATAL, "verifier_sandbox_failed")
    assert "the container stopped" in (outcome.message or "")
    alive = run_verifier(_as_container(FakeContainer()), spec)
    assert (alive.status, alive.code) == (VerifierStatus.INVALID, "verifier_result_invalid")


@pytest.mark.parametrize(("answer", "replaced"), [("", None), (f"{REPLACED}/logs\n", "/logs")])
def test_log_directories_replaced_by_the_agent_are_a_coded_failure(
    make_task: TaskFactory, tmp_path: Path, answer: str, replaced: str | None
) -> None:
    spec = _spec(make_task, tmp_path)
    fake = FakeContainer(
        responders=[lambda c: ExecResult(0, answer) if "[ -d /logs" in c else None]
    )
    if replaced is None:
        check_log_dirs(_as_container(fake), spec)
        return
    with pytest.raises(HarborRunError) as raised:
        check_log_dirs(_as_container(fake), spec)
    assert (raised.value.code, raised.value.field) == (codes.LOGS_REPLACED, replaced)


def test_gpu_requests_carry_the_tasks_gpu_types_and_the_separate_verifiers_gpus(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    toml = BASE_TOML + (
        'gpus = 2\ngpu_types = ["H100", "A100"]\n\n[verifier]\nenvironment_mode = "separate"\n'
        "\n[verifier.environment]\ngpus = 1\n"
    )
    make_task("t", toml=toml)
    dataset = open_harbor(tmp_path / "dataset", HarborOptions(), BindingRequest(agent="oracle"))
    assert dataset is not None
    runtime = dataset.runtime(TaskLock.model_validate(dataset.lock_document("t", {})))
    assert runtime.gpu_requests() == [
        GpuRequest(2, ("H100", "A100"), "the task container"),
        GpuRequest(1, ("H100", "A100"), "the verifier environment"),
    ]
    assert runtime.container_spec(ContainerSpec(image="i", name_hint="t")).gpu_types == (
        "H100",
        "A100",
    )


def test_the_environments_setup_exec_also_finds_the_default_users_home(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    spec = _spec(make_task, tmp_path)
    answer = ExecResult(0, f"{HOME_MARK}/home/tester\n")
    fake = FakeContainer(responders=[lambda c: answer if c.startswith("mkdir -p /logs") else None])
    prepare_environment(_as_container(fake), spec)
    (setup,) = fake.calls
    assert setup.user == "root" and HOME_MARK in setup.command
    # the oracle's layout and the healthcheck take it from there: no exec of their own
    assert home_of(_as_container(fake), None) == "/home/tester" and len(fake.calls) == 1
    # another user's home is still asked as that user
    assert home_of(_as_container(fake), "grader") == "/root" and fake.calls[-1].user == "grader"
