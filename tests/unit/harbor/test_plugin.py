"""Verifier classes (`verifier.import_path`): import errors at load time, dispatch, and the
sandbox half of the environment adapter. A stand-in `harbor.verifier.base` module replaces
Harbor, which needs Python >= 3.12 (the end-to-end tests with the real Harbor are in
tests/integration/harbor/test_plugin_verifier.py)."""

from __future__ import annotations

import abc
import math
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest

from agevalx.environments.container import ExecResult
from agevalx.environments.engine import EnvironmentFailure
from agevalx.formats.harbor import (
    HarborError,
    VerifierStatus,
    load_harbor_tasks,
    plugin,
    run_verifier,
)
from agevalx.formats.harbor import errors as codes
from agevalx.formats.harbor.plugin import (
    SandboxFailure,
    VerifierDeadline,
    VerifierSandbox,
    checked_rewards,
    load_verifier_class,
)
from agevalx.formats.harbor.rewards import InvalidReward
from tests.unit.harbor.builders import TaskFactory

pytestmark = pytest.mark.unit


class _BaseVerifier(abc.ABC):
    @abc.abstractmethod
    async def verify(self) -> Any: ...


class Good(_BaseVerifier):
    async def verify(self) -> Any:
        return None


class Abstract(_BaseVerifier):
    pass


class Plain:
    pass


def _verify_function() -> None:
    pass


@pytest.fixture
def fake_harbor(monkeypatch: pytest.MonkeyPatch) -> None:
    """`harbor.verifier.base.BaseVerifier` and a module `fake_verifiers` of classes."""
    base = types.ModuleType("harbor.verifier.base")
    base.BaseVerifier = _BaseVerifier  # type: ignore[attr-defined]
    for name in ("harbor", "harbor.verifier"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "harbor.verifier.base", base)
    verifiers = types.ModuleType("fake_verifiers")
    for name, value in {
        "Good": Good,
        "Abstract": Abstract,
        "Plain": Plain,
        "function": _verify_function,
    }.items():
        setattr(verifiers, name, value)
    monkeypatch.setitem(sys.modules, "fake_verifiers", verifiers)


@pytest.fixture
def no_harbor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "harbor", None)
    monkeypatch.setitem(sys.modules, "harbor.verifier", None)
    monkeypatch.setitem(sys.modules, "harbor.verifier.base", None)


def _load_fails(task: Path, job: Any) -> HarborError:
    with pytest.raises(HarborError) as caught:
        load_harbor_tasks(task, job, environ={})
    return caught.value


# --- import errors, before any environment starts ---------------------------------------


@pytest.mark.usefixtures("no_harbor")
def test_without_harbor_an_import_path_names_the_python_to_install_into(
    make_task: TaskFactory, tmp_path: Path
) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("verifier:\n  import_path: my_verifiers:Judge\n")
    error = _load_fails(make_task("a"), job)
    assert (error.code, error.file, error.field) == (
        codes.HARBOR_NOT_INSTALLED,
        str(job),
        "verifier.import_path",
    )
    assert sys.executable in error.message
    if sys.version_info < (3, 12):
        assert "Python >= 3.12" in error.message
    assert error.hint and "uv pip install --python" in error.hint


@pytest.mark.usefixtures("fake_harbor")
@pytest.mark.parametrize(
    ("import_path", "code"),
    [
        ("not_installed_verifiers:Judge", codes.VERIFIER_IMPORT_FAILED),
        ("fake_verifiers:Missing", codes.VERIFIER_IMPORT_FAILED),
        ("fake_verifiers:Plain", codes.VERIFIER_NOT_A_VERIFIER),
        ("fake_verifiers:Abstract", codes.VERIFIER_NOT_A_VERIFIER),
        ("fake_verifiers:function", codes.VERIFIER_NOT_A_VERIFIER),
        ("fake_verifiers", codes.JOB_CONFIG_INVALID),
        (":Good", codes.JOB_CONFIG_INVALID),
        ("fake_verifiers:", codes.JOB_CONFIG_INVALID),
    ],
)
def test_a_class_that_cannot_verify_fails_the_load(
    make_task: TaskFactory, import_path: str, code: str
) -> None:
    error = _load_fails(make_task("a"), {"verifier": {"import_path": import_path}})
    assert (error.code, error.field) == (code, "verifier.import_path")
    assert error.hint


@pytest.mark.usefixtures("fake_harbor")
def test_a_missing_package_error_says_how_to_install_it() -> None:
    with pytest.raises(HarborError) as caught:
        load_verifier_class("not_installed_verifiers:Judge", file="job.yaml")
    assert "No module named 'not_installed_verifiers'" in caught.value.message
    assert caught.value.hint and "uv pip install --python" in caught.value.hint
    assert caught.value.file == "job.yaml"


@pytest.mark.usefixtures("fake_harbor")
def test_an_importable_verifier_class_is_accepted_and_carried_by_the_spec(
    make_task: TaskFactory,
) -> None:
    job = {"verifier": {"import_path": "fake_verifiers:Good", "kwargs": {"judge": "m", "n": 2}}}
    loaded = load_harbor_tasks(make_task("a"), job, environ={})
    verifier = loaded.tasks[0].verifier
    assert (verifier.import_path, verifier.class_kwargs) == (
        "fake_verifiers:Good",
        {"judge": "m", "n": 2},
    )
    assert not [w for w in loaded.warnings if (w.field or "").startswith("verifier.")]
    assert load_verifier_class("fake_verifiers:Good") is Good


def test_kwargs_without_import_path_are_still_refused(make_task: TaskFactory) -> None:
    error = _load_fails(make_task("a"), {"verifier": {"kwargs": {"a": 1}}})
    assert (error.code, error.field) == (codes.JOB_CONFIG_INVALID, "verifier.kwargs")


def test_the_default_verifier_needs_no_import_path(make_task: TaskFactory) -> None:
    spec = load_harbor_tasks(make_task("a"), {"verifier": {"env": {}}}, environ={}).tasks[0]
    assert (spec.verifier.import_path, spec.verifier.class_kwargs) == (None, {})


# --- dispatch -----------------------------------------------------------------------------


@pytest.mark.usefixtures("fake_harbor")
def test_run_verifier_hands_a_spec_with_an_import_path_to_the_plugin(
    make_task: TaskFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    spec = load_harbor_tasks(
        make_task("a"), {"verifier": {"import_path": "fake_verifiers:Good"}}, environ={}
    ).tasks[0]
    calls: list[dict[str, Any]] = []

    def fake_run(container: object, spec: object, **options: Any) -> Any:
        calls.append(options)
        raise EnvironmentFailure("exec_failed", "the container is gone")

    monkeypatch.setattr(plugin, "run_plugin_verifier", fake_run)
    outcome = run_verifier(object(), spec, timeout=5, trial_root=tmp_path)  # type: ignore[arg-type]
    assert outcome.status == VerifierStatus.FATAL
    assert outcome.code == "verifier_sandbox_failed"
    (options,) = calls
    assert (options["workdir"], options["trial_root"]) == ("/", tmp_path)
    assert options["deadline"] == pytest.approx(time.monotonic() + 5, abs=1)


# --- the sandbox half of the environment adapter ------------------------------------------


class FakeContainer:
    """Answers the shell and HOME probes; every other command gets `result` (or raises)."""

    def __init__(self, result: ExecResult | None = None, fail: bool = False) -> None:
        self.result = result or ExecResult(exit_code=0, output="done")
        self.fail = fail
        self.calls: list[dict[str, Any]] = []
        self.default_home: str | None = None  # no setup exec asked: `home_of` asks

    def exec(self, command: str, **options: Any) -> ExecResult:
        if "command -v bash" in command:  # the image has bash
            return ExecResult(exit_code=0, output="bash\n")
        if "getent passwd" in command:
            return ExecResult(exit_code=0, output="/home/tester\n")
        if self.fail:
            raise EnvironmentFailure("exec_failed", "docker exec failed")
        self.calls.append({"command": command, **options})
        return self.result

    def read_file(self, path: str, limit: int) -> bytes | None:
        return None

    def copy_file(self, path: str, target: Path, limit: int | None = None) -> bool:
        return False


def _sandbox(container: FakeContainer, seconds: float = 60) -> VerifierSandbox:
    return VerifierSandbox(container, "/app", time.monotonic() + seconds)  # type: ignore[arg-type]


def test_exec_runs_in_the_workdir_with_home_under_the_given_env() -> None:
    container = FakeContainer()
    result = _sandbox(container).exec(
        "echo hi", cwd=None, env={"A": "1"}, timeout_sec=None, user="tester"
    )
    assert result.output == "done"
    (call,) = container.calls
    assert call["command"] == "bash -c 'echo hi'"
    assert (call["workdir"], call["user"]) == ("/app", "tester")
    assert call["environment"] == {"HOME": "/home/tester", "A": "1"}
    assert 59 < call["timeout"] <= 60


def test_exec_timeout_is_capped_at_the_verifier_deadline() -> None:
    container = FakeContainer(ExecResult(exit_code=137, output="", timed_out=True))
    sandbox = _sandbox(container, seconds=30)
    with pytest.raises(VerifierDeadline):
        sandbox.exec("sleep 99", cwd="/", env=None, timeout_sec=600, user=None)
    assert sandbox.deadline_hit
    assert container.calls[0]["timeout"] <= 30


def test_a_command_past_its_own_timeout_raises_as_harbor_does() -> None:
    container = FakeContainer(ExecResult(exit_code=137, output="", timed_out=True))
    sandbox = _sandbox(container, seconds=600)
    with pytest.raises(RuntimeError, match="Command timed out after 5 seconds"):
        sandbox.exec("sleep 99", cwd="/", env=None, timeout_sec=5, user=None)
    assert not sandbox.deadline_hit and sandbox.failure is None


def test_sandbox_failures_are_recorded_even_when_the_verifier_catches_them() -> None:
    sandbox = _sandbox(FakeContainer(fail=True))
    with pytest.raises(SandboxFailure):
        sandbox.exec("true", cwd=None, env=None, timeout_sec=None, user=None)
    assert isinstance(sandbox.failure, EnvironmentFailure)


def test_a_missing_file_is_the_verifiers_error_not_the_sandboxs(tmp_path: Path) -> None:
    sandbox = _sandbox(FakeContainer())
    with pytest.raises(FileNotFoundError):
        sandbox.download_file("/logs/verifier/reward.txt", tmp_path / "reward.txt")
    with pytest.raises(FileNotFoundError):
        sandbox.upload_file(tmp_path / "missing.txt", "/tmp/x")
    assert sandbox.failure is None


def test_rewards_must_be_finite_numbers() -> None:
    result = types.SimpleNamespace(rewards={"reward": 1, "ok": True, "f": 0.5})
    assert checked_rewards(result) == {"reward": 1, "ok": 1.0, "f": 0.5}
    invalid = (None, {"reward": math.nan}, {"reward": math.inf}, {"reward": "1"}, {"r": 10**400})
    for rewards in invalid:
        with pytest.raises(InvalidReward):
            checked_rewards(types.SimpleNamespace(rewards=rewards))
